package dev.pekkordma.soft;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.*;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;

/**
 * The far side of {@link TcpFabricTest}, in its own JVM: prints its GID, QP number, buffer
 * address and rkey; reads the test's GID and QP number; connects; echoes one SEND back with the
 * bytes the test wrote into its buffer; exits when stdin closes.
 */
public final class FabricPeerMain {
  public static void main(String[] args) throws Exception {
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()))) {
      DeviceContext ctx = p.open(p.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(64, null);
      QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
      OffHeapBuffer buf = OffHeapBuffer.allocate(1 << 20);
      int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
      MemoryRegion mr = pd.registerMemory(buf, access);
      buf.put(600_000, "from-the-peer".getBytes(), 0, 13);
      System.out.println(ctx.queryGid(1, 0) + " " + qp.qpNum() + " " + mr.address() + " " + mr.rkey());
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
      String[] theirs = in.readLine().split(" ");
      qp.modify(QpAttributes.toInit(1, access));
      qp.modify(QpAttributes.toRtr(AddressVector.global(Gid.parse(theirs[0]), 0, 1),
          Integer.parseInt(theirs[1]), 0, Mtu.MTU_4096));
      // the first request opens and proves the fabric link to the other process: on a loaded
      // machine longer than seven of verbs' usual 67 ms timeouts (timeout 14); 18 is about 1 s
      qp.modify(QpAttributes.toRts(0).timeout(18));
      try (RecvRequests r = new RecvRequests(1, 1); SendRequests s = new SendRequests(1, 1);
          WorkCompletions wc = new WorkCompletions(4)) {
        r.add(1).sge(mr, 800_000, 4096);
        qp.postRecv(r);
        System.out.println("ready");
        System.out.flush();
        // the test writes, then sends: echo the written bytes (offset 0, length in the send)
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (cq.poll(wc) == 0) {
          if (System.nanoTime() > deadline) throw new IllegalStateException("no send arrived");
          Thread.onSpinWait();
        }
        if (!wc.ok(0)) throw new IllegalStateException(wc.describe(0));
        int len = (int) buf.getLong(800_000);
        s.add(2, WrOpcode.SEND, SendRequests.SIGNALED).sge(mr, 0, len);
        qp.postSend(s);
        while (cq.poll(wc) == 0) Thread.onSpinWait();
        if (!wc.ok(0)) throw new IllegalStateException(wc.describe(0));
      }
      in.readLine(); // until the test is done with our memory
    }
  }
}
