package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.testing.TcpProxy;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Faults between real processes: the peer's fabric (shared memory off, so that its frames cross
 * the proxy) sits behind a TCP proxy (it advertises the
 * proxy's port) that blackholes, resets or cuts connections; peers are killed with SIGKILL
 * mid-transfer. A transient fault is retried and the transfer completes intact; a lasting one
 * ends in RETRY_EXC_ERR naming the peer, within the time the QP's attributes give; either way
 * everything is freed, and a new peer gets in.
 */
class FabricFaultTest {
  private static final Duration T = Duration.ofSeconds(60);
  private static final int CHUNK = 64 * 1024;
  private OneQp fx;
  private DeviceContext ctx;
  private CompletionQueue cq;
  private QueuePair qp;
  private OffHeapBuffer memory;
  private MemoryRegion mr;

  @BeforeEach
  void setUp() {
    fx = new OneQp(SoftPeerMain.REGION);
    ctx = fx.ctx;
    cq = fx.cq;
    qp = fx.qp;
    memory = fx.memory;
    mr = fx.mr;
    java.util.Random r = new java.util.Random(42);
    byte[] chunk = new byte[4096];
    for (int at = 0; at < SoftPeerMain.REGION; at += chunk.length) {
      r.nextBytes(chunk);
      fx.memory.put(at, chunk, 0, chunk.length);
    }
  }

  @AfterEach
  void tearDown() {
    fx.close();
  }

  @Test
  void aBlackholedLinkEndsTheRequesterInRetryExcErrNamingThePeer() throws Exception {
    try (Proxied p = new Proxied()) {
      HostileFabric.connect(qp, p.peer.gid, p.peer.qpn, 14, 3);
      p.peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      assertEquals(WcStatus.SUCCESS, writes(1, p.peer));
      p.proxy.mode(TcpProxy.Mode.BLACKHOLE);
      long start = System.nanoTime();
      assertEquals(WcStatus.RETRY_EXC_ERR, writes(1, p.peer));
      long took = (System.nanoTime() - start) / 1_000_000;
      long expected = 4 * (4096L << 14) / 1_000_000; // 4 tries of 67 ms
      assertTrue(took >= expected * 9 / 10 && took < expected + 3000, "took " + took + " ms");
      String cause = qp.errorCause().orElseThrow();
      assertTrue(cause.contains("no answer") && cause.contains(p.peer.fabric().toString()), cause);
      p.proxy.mode(TcpProxy.Mode.PASS);
      p.peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aResetLinkIsRetriedAndTheTransferCompletesIntact() throws Exception {
    try (Proxied p = new Proxied()) {
      HostileFabric.connect(qp, p.peer.gid, p.peer.qpn, 14, 7);
      p.peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      Thread resetter = new Thread(() -> {
        awaitForwarded(p.proxy, 8 * CHUNK);
        p.proxy.resetAll();
      });
      resetter.start();
      assertEquals(WcStatus.SUCCESS, writes(SoftPeerMain.REGION / CHUNK, p.peer));
      resetter.join();
      assertTrue(p.proxy.accepted() >= 2, "the link was made again after the reset");
      assertSameBytes(p.peer);
      p.peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aConnectionCutMidFrameIsRetriedAndTheTransferCompletesIntact() throws Exception {
    try (Proxied p = new Proxied()) {
      HostileFabric.connect(qp, p.peer.gid, p.peer.qpn, 14, 7);
      p.peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      p.proxy.cutAfter(5 * CHUNK + 1000); // inside the sixth write's payload
      assertEquals(WcStatus.SUCCESS, writes(SoftPeerMain.REGION / CHUNK, p.peer));
      assertTrue(p.proxy.accepted() >= 2, "the link was made again after the cut");
      assertSameBytes(p.peer);
      p.peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aPeerKilledMidTransferEndsTheRequesterInRetryExcErrNamingIt() throws Exception {
    try (PeerJvm peer = PeerJvm.start("")) {
      HostileFabric.connect(qp, peer.gid, peer.qpn, 14, 3);
      peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      assertEquals(WcStatus.SUCCESS, writes(4, peer));
      Thread killer = new Thread(peer.process::killHard);
      killer.start();
      WcStatus status = WcStatus.SUCCESS;
      for (int i = 0; i < 1000 && status == WcStatus.SUCCESS; i++) status = writes(4, peer);
      killer.join();
      assertEquals(WcStatus.RETRY_EXC_ERR, status);
      String cause = qp.errorCause().orElseThrow();
      assertTrue(cause.contains("no answer") && cause.contains(peer.fabric().toString()), cause);
    }
  }

  @Test
  void aRequesterKilledMidTransferLeavesNothingBehindAndANewPeerGetsIn() throws Exception {
    try (PeerJvm first = PeerJvm.start("")) {
      HostileFabric.connect(qp, first.gid, first.qpn, 14, 3);
      first.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      first.ask("STREAM " + CHUNK + " " + mr.address() + " " + mr.rkey(), "STREAMING", T);
      Thread.sleep(200); // writes land meanwhile
      first.process.killHard();
    }
    try (PeerJvm second = PeerJvm.start("")) {
      HostileFabric.connect(qp, second.gid, second.qpn, 14, 3);
      second.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      second.ask("FILL 5", "FILLED", T);
      assertEquals("SUCCESS -", second.ask("WRITE 0 " + CHUNK + " " + mr.address() + " "
          + mr.rkey() + " 1", "DONE ", T));
      byte[] landed = new byte[CHUNK];
      memory.get(0, landed, 0, CHUNK);
      assertEquals(second.ask("SUM 0 " + CHUNK, "SUM ", T),
          String.valueOf(java.util.Arrays.hashCode(landed)), "the new peer's write landed");
      second.ask("EXIT", "BYE", T);
    }
  }

  /** {@code n} writes of a chunk each, covering our region in order; the first failure. */
  private WcStatus writes(int n, PeerJvm peer) throws InterruptedException {
    try (SendRequests s = new SendRequests(n, 1); WorkCompletions wc = new WorkCompletions(64)) {
      for (int i = 0; i < n; i++) {
        long at = (long) i * CHUNK % SoftPeerMain.REGION;
        s.add(i, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, at, CHUNK)
            .rdma(peer.address + at, peer.rkey);
      }
      qp.postSend(s);
      WcStatus first = WcStatus.SUCCESS;
      int got = 0;
      long deadline = System.nanoTime() + T.toNanos();
      while (got < n) {
        assertTrue(System.nanoTime() < deadline, "only " + got + " of " + n + " completed");
        int k = cq.poll(wc);
        for (int i = 0; i < k; i++) if (!wc.ok(i) && first == WcStatus.SUCCESS) first = wc.status(i);
        got += k;
        if (k == 0) Thread.sleep(1);
      }
      return first;
    }
  }

  private void assertSameBytes(PeerJvm peer) {
    byte[] ours = new byte[SoftPeerMain.REGION];
    memory.get(0, ours, 0, ours.length);
    assertEquals(String.valueOf(java.util.Arrays.hashCode(ours)),
        peer.ask("SUM 0 " + SoftPeerMain.REGION, "SUM ", T), "the peer holds what we wrote");
  }

  private static void awaitForwarded(TcpProxy proxy, long bytes) {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (proxy.forwarded() < bytes && System.nanoTime() < deadline) Thread.onSpinWait();
  }

  /** A peer process whose fabric is reached through a proxy: its GIDs carry the proxy's port. */
  private static final class Proxied implements AutoCloseable {
    final TcpProxy proxy;
    final PeerJvm peer;

    Proxied() throws Exception {
      int bind;
      try (ServerSocket probe = new ServerSocket(0)) {
        bind = probe.getLocalPort();
      }
      proxy = new TcpProxy(new InetSocketAddress("127.0.0.1", bind));
      peer = PeerJvm.start("pekko-rdma.soft.fabric { port = " + bind + "\nadvertised-port = "
          + proxy.port() + "\nshared-memory = off }");
    }

    @Override
    public void close() throws Exception {
      peer.close();
      proxy.close();
    }
  }
}
