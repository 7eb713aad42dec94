package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.*;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Two processes over the TCP fabric: one-sided operations reach the other JVM's memory. */
class TcpFabricTest {
  @Test
  void writeReadAtomicAndSendAcrossProcesses() throws Exception {
    Process peer = new ProcessBuilder(System.getProperty("java.home") + File.separator + "bin"
        + File.separator + "java", "-cp", System.getProperty("java.class.path"),
        FabricPeerMain.class.getName()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
            .withFallback(ConfigFactory.load()));
        SendRequests s = new SendRequests(8, 1);
        RecvRequests r = new RecvRequests(1, 1);
        WorkCompletions wc = new WorkCompletions(8)) {
      BufferedReader out = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
      PrintWriter in = new PrintWriter(peer.getOutputStream(), true);
      String[] theirs = endpointLine(out).split(" ");
      Gid peerGid = Gid.parse(theirs[0]);
      int peerQpn = Integer.parseInt(theirs[1]);
      long peerAddr = Long.parseLong(theirs[2]);
      int peerRkey = Integer.parseInt(theirs[3]);

      DeviceContext ctx = p.open(p.devices().get(0));
      assertNotEquals(peerGid, ctx.queryGid(1, 0), "another process, another device GID");
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(64, null);
      QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
      OffHeapBuffer buf = OffHeapBuffer.allocate(1 << 20);
      MemoryRegion mr = pd.registerMemory(buf, Access.LOCAL_WRITE);
      in.println(ctx.queryGid(1, 0) + " " + qp.qpNum());
      qp.modify(QpAttributes.toInit(1, Access.LOCAL_WRITE));
      qp.modify(QpAttributes.toRtr(AddressVector.global(peerGid, 0, 1), peerQpn, 0, Mtu.MTU_4096));
      // the first request opens and proves the fabric link to the other process: on a loaded
      // machine longer than seven of verbs' usual 67 ms timeouts (timeout 14); 18 is about 1 s
      qp.modify(QpAttributes.toRts(0).timeout(18));
      assertEquals("ready", endpointLine(out));

      byte[] data = new byte[300_000];
      new java.util.Random(7).nextBytes(data);
      buf.put(0, data, 0, data.length);
      buf.putLong(400_000, data.length);
      r.add(9).sge(mr, 500_000, data.length);
      qp.postRecv(r);
      s.add(1, WrOpcode.RDMA_WRITE, 0).sge(mr, 0, data.length).rdma(peerAddr, peerRkey);
      s.add(2, WrOpcode.RDMA_READ, SendRequests.SIGNALED).sge(mr, 350_000, 13).rdma(peerAddr + 600_000, peerRkey);
      s.add(3, WrOpcode.ATOMIC_CMP_AND_SWP, SendRequests.SIGNALED).sge(mr, 360_000, 8)
          .atomic(peerAddr + 700_000, peerRkey, 0, 42);
      s.add(4, WrOpcode.SEND, SendRequests.SIGNALED).sge(mr, 400_000, 8);
      qp.postSend(s);
      StringBuilder seen = new StringBuilder();
      int got = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (got < 4 && System.nanoTime() < deadline) {
        int n = cq.poll(wc);
        for (int i = 0; i < n; i++) {
          seen.append(wc.describe(i)).append('\n');
          assertTrue(wc.ok(i), seen.toString());
        }
        got += n;
      }
      assertEquals(4, got, "read, atomic, send and the echo: " + seen);
      byte[] read = new byte[13];
      buf.get(350_000, read, 0, 13);
      assertEquals("from-the-peer", new String(read, StandardCharsets.UTF_8));
      assertEquals(0, buf.getLong(360_000), "CAS returns the old value");
      byte[] echoed = new byte[data.length];
      buf.get(500_000, echoed, 0, data.length);
      assertArrayEquals(data, echoed, "the peer echoed what we wrote into its memory");

      in.println("done");
      assertTrue(peer.waitFor(20, TimeUnit.SECONDS));
      assertEquals(0, peer.exitValue());
      qp.close();
      mr.close();
      buf.close();
      cq.close();
      pd.close();
      ctx.close();
    } finally {
      peer.destroyForcibly();
    }
  }

  /**
   * The peer's next line of its protocol: its logging (the provider it chose) shares its
   * standard output, so lines of the log are passed over.
   */
  static String endpointLine(BufferedReader out) throws java.io.IOException {
    String line;
    do {
      line = out.readLine();
    } while (line != null && (line.contains(" INFO ") || line.contains(" WARN ")));
    return line;
  }
}
