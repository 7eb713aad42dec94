package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.testing.TcpProxy;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Same-host links through shared memory between real processes. The accepting side's fabric
 * sits behind a TCP proxy (its GIDs carry the proxy's port), so what the proxy forwards tells
 * whether the frames crossed the socket or the rings; the rings' directory is the test's own, so
 * that a file left behind would be seen.
 */
class SharedMemoryFabricTest {
  private static final Duration T = Duration.ofSeconds(60);
  private static final int CHUNK = 64 * 1024;
  private static final int WRITES = 16;
  @TempDir Path dir;

  @Test
  void twoProcessesCarryWritesAndReadsThroughTheRingsAndLeaveNoFile() throws Exception {
    try (Proxied server = new Proxied(dir, "");
        PeerJvm client = PeerJvm.start(inDir(dir))) {
      transfer(server, client);
      assertTrue(server.proxy.forwarded() < CHUNK, server.proxy.forwarded()
          + " bytes crossed the socket: the frames went through the rings");
      assertNoFile();
      client.ask("EXIT", "BYE", T);
      server.peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aSideThatIsOffKeepsTheLinkOnTcp() throws Exception {
    try (Proxied server = new Proxied(dir, "pekko-rdma.soft.fabric.shared-memory = off\n");
        PeerJvm client = PeerJvm.start(inDir(dir))) {
      transfer(server, client);
      assertTrue(server.proxy.forwarded() > (long) WRITES * CHUNK, server.proxy.forwarded()
          + " bytes crossed the socket");
      assertNoFile();
      client.ask("EXIT", "BYE", T);
      server.peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aPeerKilledMidTransferFailsOurQpNamingItAndLeavesNoFile() throws Exception {
    try (OneQp fx = new OneQp(SoftPeerMain.REGION)) {
      TcpFabric tcp = SoftFabric.get().tcp();
      SharedMemoryConfig before = tcp.sharedMemory();
      tcp.sharedMemory(new SharedMemoryConfig(true, dir, before.ring()));
      try (Proxied p = new Proxied(dir, "")) {
        HostileFabric.connect(fx.qp, p.peer.gid, p.peer.qpn, 14, 3);
        p.peer.connect(fx.ctx.queryGid(1, 0), fx.qp.qpNum(), 14, 3);
        assertEquals(WcStatus.SUCCESS, writes(fx, p.peer, 4));
        assertTrue(p.proxy.forwarded() < CHUNK, "through the rings: " + p.proxy.forwarded());
        Thread killer = new Thread(p.peer.process::killHard);
        killer.start();
        WcStatus status = WcStatus.SUCCESS;
        for (int i = 0; i < 1000 && status == WcStatus.SUCCESS; i++) status = writes(fx, p.peer, 4);
        killer.join();
        assertEquals(WcStatus.RETRY_EXC_ERR, status);
        String cause = fx.qp.errorCause().orElseThrow();
        assertTrue(cause.contains(p.peer.fabric().toString()), cause);
        assertNoFile();
      } finally {
        tcp.sharedMemory(before);
      }
    }
  }

  /** Shared memory on (the default is off), its files in {@code dir}. */
  private static String inDir(Path dir) {
    return "pekko-rdma.soft.fabric { shared-memory = auto\nshared-memory-directory = \"" + dir
        + "\" }\n";
  }

  /** WRITEs from the client into the server, a READ back; both ends' bytes compared. */
  private static void transfer(Proxied server, PeerJvm client) {
    server.peer.connect(client.gid, client.qpn, 17, 7);
    client.connect(server.peer.gid, server.peer.qpn, 17, 7);
    client.ask("FILL 7", "FILLED", T);
    server.peer.ask("FILL 8", "FILLED", T);
    String serverData = server.peer.ask("SUM 1048576 " + CHUNK, "SUM ", T);
    assertEquals("SUCCESS -", client.ask("WRITE 0 " + CHUNK + " " + server.peer.address + " "
        + server.peer.rkey + " " + WRITES, "DONE ", T));
    assertEquals(client.ask("SUM 0 " + CHUNK, "SUM ", T),
        server.peer.ask("SUM 0 " + CHUNK, "SUM ", T), "what the client wrote is the server's");
    assertEquals("SUCCESS -", client.ask("READ 2097152 " + CHUNK + " "
        + (server.peer.address + 1048576) + " " + server.peer.rkey, "DONE ", T));
    assertEquals(serverData, client.ask("SUM 2097152 " + CHUNK, "SUM ", T),
        "what the client read is the server's");
  }

  private void assertNoFile() throws Exception {
    try (var files = Files.list(dir)) {
      assertEquals(java.util.List.of(), files.toList(), "nothing left in " + dir);
    }
  }

  /** {@code n} writes of a chunk from our QP into the peer's region; the first failure. */
  private static WcStatus writes(OneQp fx, PeerJvm peer, int n) throws InterruptedException {
    try (SendRequests s = new SendRequests(n, 1); WorkCompletions wc = new WorkCompletions(64)) {
      for (int i = 0; i < n; i++) {
        s.add(i, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(fx.mr, (long) i * CHUNK, CHUNK)
            .rdma(peer.address + (long) i * CHUNK, peer.rkey);
      }
      fx.qp.postSend(s);
      WcStatus first = WcStatus.SUCCESS;
      long deadline = System.nanoTime() + T.toNanos();
      for (int got = 0; got < n; ) {
        assertTrue(System.nanoTime() < deadline, "only " + got + " of " + n + " completed");
        int k = fx.cq.poll(wc);
        for (int i = 0; i < k; i++) if (!wc.ok(i) && first == WcStatus.SUCCESS) first = wc.status(i);
        got += k;
        if (k == 0) Thread.sleep(1);
      }
      return first;
    }
  }

  /** A peer process whose fabric is reached through a proxy, its rings in {@code dir}. */
  private static final class Proxied implements AutoCloseable {
    final TcpProxy proxy;
    final PeerJvm peer;

    Proxied(Path dir, String config) throws Exception {
      int bind;
      try (ServerSocket probe = new ServerSocket(0)) {
        bind = probe.getLocalPort();
      }
      proxy = new TcpProxy(new InetSocketAddress("127.0.0.1", bind));
      peer = PeerJvm.start(inDir(dir) + config + "pekko-rdma.soft.fabric { port = " + bind
          + "\nadvertised-port = " + proxy.port() + " }");
    }

    @Override
    public void close() throws Exception {
      peer.close();
      proxy.close();
    }
  }
}
