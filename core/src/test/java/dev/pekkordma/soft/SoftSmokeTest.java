package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.*;
import org.junit.jupiter.api.Test;

class SoftSmokeTest {
  @Test
  void sendWriteReadAtomicBetweenTwoQps() throws Exception {
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()))) {
      DeviceContext ctx = p.open(p.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(64, null);
      QueuePair a = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
      QueuePair b = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
      int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
      Gid gid = ctx.queryGid(1, 0);
      for (QueuePair[] pair : new QueuePair[][] {{a, b}, {b, a}}) {
        pair[0].modify(QpAttributes.toInit(1, access));
        pair[0].modify(QpAttributes.toRtr(AddressVector.global(gid, 0, 1), pair[1].qpNum(), 0, Mtu.MTU_4096));
        pair[0].modify(QpAttributes.toRts(0));
      }
      OffHeapBuffer buf = OffHeapBuffer.allocate(4096);
      MemoryRegion mr = pd.registerMemory(buf, access);
      buf.put(0, "hello".getBytes(), 0, 5);
      try (SendRequests s = new SendRequests(8, 2); RecvRequests r = new RecvRequests(8, 1);
          WorkCompletions wc = new WorkCompletions(16)) {
        r.add(7).sge(mr, 1024, 64);
        b.postRecv(r);
        s.add(1, WrOpcode.SEND, SendRequests.SIGNALED).sge(mr, 0, 5);
        s.add(2, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, 0, 5).rdma(mr.address() + 2048, mr.rkey());
        s.add(3, WrOpcode.ATOMIC_FETCH_AND_ADD, SendRequests.SIGNALED).sge(mr, 3000, 8).atomic(mr.address() + 3008, mr.rkey(), 5, 0);
        a.postSend(s);
        int got = 0;
        long deadline = System.nanoTime() + 5_000_000_000L;
        StringBuilder seen = new StringBuilder();
        while (got < 4 && System.nanoTime() < deadline) {
          int n = cq.poll(wc);
          for (int i = 0; i < n; i++) {
            seen.append(wc.describe(i)).append('\n');
            assertEquals(WcStatus.SUCCESS, wc.status(i), seen.toString());
          }
          got += n;
        }
        assertEquals(4, got, seen.toString());
        byte[] out = new byte[5];
        buf.get(1024, out, 0, 5);
        assertEquals("hello", new String(out));
        buf.get(2048, out, 0, 5);
        assertEquals("hello", new String(out));
        assertEquals(5, buf.getLong(3008));
        assertEquals(0, buf.getLong(3000));
      }
      a.close();
      b.close();
      mr.close();
      buf.close();
      cq.close();
      pd.close();
      ctx.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), p.liveResources());
    }
  }
}
