package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.*;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * The data path allocates nothing per work request: posting, the engine's work and polling,
 * measured in bytes allocated by the posting thread and by the device's engine thread.
 */
class NoAllocationTest {
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  @Test
  void postAndPollAllocateNothingPerRequest() throws Exception {
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
            .withFallback(ConfigFactory.load()));
        OffHeapBuffer buf = OffHeapBuffer.allocate(1 << 20);
        SendRequests s = new SendRequests(16, 1);
        RecvRequests r = new RecvRequests(16, 1);
        WorkCompletions wc = new WorkCompletions(64)) {
      DeviceContext ctx = p.open(p.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(1024, null);
      QueuePair a = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64).maxRecvWr(64));
      QueuePair b = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64).maxRecvWr(64));
      int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
      Gid gid = ctx.queryGid(1, 0);
      for (QueuePair[] pair : new QueuePair[][] {{a, b}, {b, a}}) {
        pair[0].modify(QpAttributes.toInit(1, access));
        pair[0].modify(QpAttributes.toRtr(AddressVector.global(gid, 0, 1), pair[1].qpNum(), 0, Mtu.MTU_4096));
        pair[0].modify(QpAttributes.toRts(0));
      }
      MemoryRegion mr = pd.registerMemory(buf, access);
      long engine = engineThreadId(SoftDevice.engineName(p.devices().get(0).name(), gid));

      // warm up: class loading, lazily grown tables, and the JIT's escape analysis (C2's, whose
      // compiles come after thousands of rounds: run alone after 2,000, the engine allocated)
      run(a, b, mr, s, r, wc, cq, 40_000);
      long mine = THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
      long theirs = THREADS.getThreadAllocatedBytes(engine);
      int requests = 20_000;
      run(a, b, mr, s, r, wc, cq, requests);
      long perRequestMine = (THREADS.getThreadAllocatedBytes(Thread.currentThread().getId()) - mine) / requests;
      long perRequestEngine = (THREADS.getThreadAllocatedBytes(engine) - theirs) / requests;
      assertTrue(perRequestMine == 0, "posting and polling allocated " + perRequestMine + " B per request");
      assertTrue(perRequestEngine == 0, "the engine allocated " + perRequestEngine + " B per request");
      a.close();
      b.close();
      mr.close();
      cq.close();
      pd.close();
      ctx.close();
    }
  }

  /** {@code n} rounds of: post a receive on b, SEND a->b and RDMA WRITE a->b, poll all three. */
  private static void run(QueuePair a, QueuePair b, MemoryRegion mr, SendRequests s, RecvRequests r,
      WorkCompletions wc, CompletionQueue cq, int n) {
    for (int i = 0; i < n; i += 8) {
      r.clear();
      s.clear();
      for (int k = 0; k < 8; k++) {
        r.add(k).sge(mr, 65536 + k * 256L, 256);
        s.add(k, WrOpcode.SEND, SendRequests.SIGNALED).sge(mr, k * 64L, 64);
        s.add(k, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, k * 64L, 64)
            .rdma(mr.address() + 131072 + k * 64L, mr.rkey());
      }
      b.postRecv(r);
      a.postSend(s);
      int got = 0;
      while (got < 24) {
        int m = cq.poll(wc);
        for (int k = 0; k < m; k++) {
          if (!wc.ok(k)) throw new AssertionError(wc.describe(k));
        }
        got += m;
      }
    }
  }

  private static long engineThreadId(String device) {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals("soft-rdma-engine-" + device)) return t.getId();
    }
    throw new AssertionError("no engine thread for " + device);
  }
}
