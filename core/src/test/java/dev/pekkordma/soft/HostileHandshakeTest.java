package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Peers that attack the fabric's handshake: relaying another process's HELLO, claiming this
 * fabric's own address, asking about nonces, sending nothing or a byte now and then, opening
 * many connections or holding idle ones. Each is refused or cut off by its deadline with a line
 * naming it and why, holds no place a proven process needs, and the victim's traffic goes on.
 */
class HostileHandshakeTest {
  private HostileFabric fx;
  private LogCapture log;
  private TcpFabric tcp;

  @BeforeEach
  void setUp() throws IOException {
    fx = new HostileFabric();
    log = new LogCapture(TcpFabric.class);
    tcp = SoftFabric.get().tcp();
  }

  @AfterEach
  void tearDown() throws IOException {
    HostileRequestsTest.defaults(tcp);
    log.close();
    fx.close();
  }

  @Test
  void aHelloPassedOnFromTheListenerItWasSentToIsRefusedAsRelayed() throws Exception {
    // the victim's peer sent this HELLO to another process (the rogue), which passes it on
    FabricWire.Handshake hello = fx.peer.hello(fx.peer.address(), fx.otherPeer.address(), true);
    RawFabricPeer.Refused refused = assertThrows(RawFabricPeer.Refused.class,
        () -> RawFabricPeer.send(hello));
    assertEquals(FabricWire.RELAYED, refused.code);
    log.await(5000, "claims to be the fabric at " + fx.peer.address(), "relayed");
    fx.otherTrafficGoesOn();
  }

  @Test
  void aRelayedHelloNamingThisListenerIsNotConfirmedByTheProcessItNames() throws Exception {
    // the rogue rewrites the listener the HELLO names: the nonce was bound to the rogue's
    FabricWire.Handshake hello = fx.peer.hello(fx.peer.address(), fx.otherPeer.address(), true);
    hello.to = RawFabricPeer.ours();
    RawFabricPeer.Refused refused = assertThrows(RawFabricPeer.Refused.class,
        () -> RawFabricPeer.send(hello));
    assertEquals(FabricWire.NOT_CONFIRMED, refused.code);
    log.await(5000, "claims to be the fabric at " + fx.peer.address(), "did not confirm");
    byte[] data = HostileRequestsTest.pattern(64, 3);
    try (RawFabricPeer.Conn c = fx.peer.connect()) { // the real one is let in, and heard
      c.send(fx.write(0, 0, 64).withPayload(data, FabricWire.TRAILER_WHOLE));
      assertEquals(SoftPeer.Response.ACK, c.readFrame(5000).opcodeOrCode);
    }
    assertArrayEquals(data, fx.region.read(0, 64));
  }

  @Test
  void aHelloClaimingThisFabricsOwnAddressIsRefused() {
    FabricWire.Handshake hello = fx.peer.hello(RawFabricPeer.ours(), RawFabricPeer.ours(), false);
    RawFabricPeer.Refused refused = assertThrows(RawFabricPeer.Refused.class,
        () -> RawFabricPeer.send(hello));
    assertEquals(FabricWire.OWN_ADDRESS, refused.code);
  }

  /**
   * This process's side of a relay: its fabric sends a HELLO to a rogue, which asks this
   * process, as a third process would, to confirm the nonce for another connection. Only the
   * binding of the connection the nonce went out on is confirmed, once.
   */
  @Test
  void thisFabricConfirmsItsNoncesOnlyForTheConnectionTheyWentOutOn() throws Exception {
    try (RawFabricPeer rogue = new RawFabricPeer()) {
      rogue.answerHellos(RawFabricPeer.HOLDS);
      QueuePair toRogue = writingTo(rogue, 17, 7);
      try {
        RawFabricPeer.Captured first = rogue.awaitHello(10_000);
        assertEquals(RawFabricPeer.ours(), first.hello().from);
        assertEquals(rogue.address(), first.hello().to);
        byte[] elsewhere = ChannelBinding.of(RawFabricPeer.ours(), fx.otherPeer.address(),
            new byte[0], new byte[0]);
        assertEquals(FabricWire.NOT_PROVEN, RawFabricPeer.prove(first.hello().nonce, elsewhere));
        assertEquals(-1, RawFabricPeer.prove(first.hello().nonce, elsewhere),
            "asked once only: a second asker is not let in");
        first.conn().close(); // our fabric tries again on a new connection: a new nonce
        RawFabricPeer.Captured second = rogue.awaitHello(10_000);
        byte[] right = ChannelBinding.of(RawFabricPeer.ours(), rogue.address(), new byte[0],
            new byte[0]);
        assertEquals(FabricWire.PROVEN, RawFabricPeer.prove(second.hello().nonce, right),
            "the connection it went out on is confirmed");
        second.conn().close();
        log.await(5000, "a relayed HELLO");
      } finally {
        toRogue.close();
      }
    }
  }

  @Test
  void aProofAboutANonceThisFabricIsNotWaitingOnIsDroppedAtOnce() throws Exception {
    byte[] nonce = new byte[FabricWire.NONCE_BYTES];
    new java.security.SecureRandom().nextBytes(nonce);
    assertEquals(-1, RawFabricPeer.prove(nonce, new byte[FabricWire.BINDING_BYTES]));
    log.await(5000, "a nonce this process is not waiting on");
  }

  @Test
  void aHandshakeTricklingItsBytesIsCutAtItsDeadlineNamingTheHandshakeTimeout()
      throws Exception {
    tcp.limits(HostileRequestsTest.defaultLimits().withHandshake(Duration.ofMillis(700)));
    byte[] all = concat(FabricWire.opening(FabricWire.LINK, null),
        fx.peer.hello(fx.peer.address(), RawFabricPeer.ours(), true).encode());
    try (Socket s = new Socket()) {
      s.connect(RawFabricPeer.ours().socketAddress(), 5000);
      long start = System.nanoTime();
      OutputStream out = s.getOutputStream();
      boolean cut = false;
      for (int i = 0; i < all.length - 1 && !cut; i++) { // a byte every 50 ms: never idle long
        try {
          out.write(all[i]);
          out.flush();
        } catch (IOException closed) {
          cut = true;
        }
        Thread.sleep(50);
      }
      s.setSoTimeout(5000);
      assertTrue(cut || s.getInputStream().read() == -1, "the connection is closed");
      long took = (System.nanoTime() - start) / 1_000_000;
      assertTrue(took < 2500, "cut at its deadline, not after " + took + " ms");
    }
    String line = log.await(5000, "no handshake within 700 ms",
        "pekko-rdma.soft.fabric.handshake-timeout");
    assertFalse(line.contains("frame-timeout"), line);
    fx.otherTrafficGoesOn();
  }

  /** Nothing may come before the answer to a HELLO: a peer that sends frames early is dropped. */
  @Test
  void bytesSentBeforeTheAnswerToAHelloDropTheConnectionAtOnce() throws Exception {
    tcp.limits(HostileRequestsTest.defaultLimits().withHandshake(Duration.ofSeconds(20)));
    try (java.net.ServerSocket neverAnswers = new java.net.ServerSocket(0, 5,
            java.net.InetAddress.getByName("127.0.0.1"));
        Socket s = new Socket()) {
      FabricAddress pit = new FabricAddress(new byte[] {127, 0, 0, 1},
          neverAnswers.getLocalPort());
      s.connect(RawFabricPeer.ours().socketAddress(), 5000);
      OutputStream out = s.getOutputStream();
      out.write(concat(FabricWire.opening(FabricWire.LINK, null),
          fx.otherPeer.hello(pit, RawFabricPeer.ours(), false).encode()));
      out.flush();
      Thread.sleep(200); // it is being proven now
      out.write(fx.write(0, 0, 8).header());
      out.flush();
      s.setSoTimeout(5000);
      assertEquals(-1, s.getInputStream().read(), "dropped, unanswered");
      log.await(5000, "it sent bytes before the answer to its HELLO");
    }
    fx.otherTrafficGoesOn();
  }

  @Test
  void aRefusalOfThisProcesssHelloIsReportedWithItsReason() throws Exception {
    try (RawFabricPeer refusing = new RawFabricPeer()) {
      refusing.answerHellos(FabricWire.BUSY);
      QueuePair qp = writingTo(refusing, 14, 7);
      try {
        assertEquals(WcStatus.RETRY_EXC_ERR, await());
        String cause = qp.errorCause().orElseThrow();
        assertTrue(cause.contains(refusing.address().toString())
            && cause.contains("pekko-rdma.soft.fabric.max-connections")
            && !cause.contains("frame-timeout"), cause);
      } finally {
        qp.close();
      }
    }
  }

  /**
   * What a connection that has proven nothing costs: silent ones and ones that sent their
   * opening sit in the gate, ones whose HELLO names a listener that never answers hold the gate's
   * call back to it; none has a thread or a frame buffer yet.
   */
  @Test
  void aConnectionThatHasProvenNothingCostsTheHeapAlmostNothing() throws Exception {
    tcp.limits(HostileRequestsTest.defaultLimits().withHandshake(Duration.ofSeconds(20)));
    int n = 402;
    List<Socket> sockets = new ArrayList<>();
    // a listener that never accepts: the system completes the calls back and nobody answers
    try (java.net.ServerSocket neverAnswers = new java.net.ServerSocket(0, n,
        java.net.InetAddress.getByName("127.0.0.1"))) {
      FabricAddress pit = new FabricAddress(new byte[] {127, 0, 0, 1},
          neverAnswers.getLocalPort());
      byte[] helloNamingIt = concat(FabricWire.opening(FabricWire.LINK, null),
          fx.otherPeer.hello(pit, RawFabricPeer.ours(), false).encode());
      try {
        long before = settledHeap();
        for (int i = 0; i < n; i++) {
          Socket s = new Socket();
          s.connect(RawFabricPeer.ours().socketAddress(), 5000);
          if (i % 3 == 1) s.getOutputStream().write(FabricWire.opening(FabricWire.LINK, null));
          if (i % 3 == 2) s.getOutputStream().write(helloNamingIt);
          sockets.add(s);
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (tcp.gate().waiting() < n) {
          assertTrue(System.nanoTime() < deadline, "all accepted: " + tcp.gate().waiting());
          Thread.sleep(10);
        }
        Thread.sleep(300);
        long perConnection = (settledHeap() - before) / n;
        System.out.printf("[heap] per connection that has proven nothing: %d bytes (%d"
            + " connections: a third silent, a third waiting for their HELLO, a third being"
            + " proven by a listener that never answers)%n", perConnection, n);
        assertTrue(perConnection < 32 * 1024, perConnection + " bytes a connection");
        for (Socket s : sockets) s.close();
        deadline = System.nanoTime() + 10_000_000_000L;
        while (tcp.gate().waiting() > 0) { // hung up: their places are free at once
          assertTrue(System.nanoTime() < deadline, "still waiting: " + tcp.gate().waiting());
          Thread.sleep(10);
        }
      } finally {
        for (Socket s : sockets) s.close();
      }
    }
    fx.otherTrafficGoesOn();
  }

  /** The heap in use once collected: what is live. */
  static long settledHeap() throws InterruptedException {
    Runtime r = Runtime.getRuntime();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 3; i++) { // the least of three collections: what is live
      System.gc();
      Thread.sleep(50);
      used = Math.min(used, r.totalMemory() - r.freeMemory());
    }
    return used;
  }

  @Test
  void theConnectionsOfOneProcessHoldOnePlace() throws Exception {
    List<RawFabricPeer.Conn> six = new ArrayList<>();
    try {
      for (int i = 0; i < 6; i++) six.add(fx.otherPeer.connect());
      for (int i = 0; i < 5; i++) {
        assertTrue(six.get(i).closedWithin(5000), "connection " + i + " gave its place up");
      }
      assertEquals(1, tcp.served().size(), "one process, one place");
    } finally {
      for (RawFabricPeer.Conn c : six) c.close();
    }
  }

  @Test
  void anIdleConnectionOfAProcessNoQpTalksToIsClosedAndOneWithAQpIsKept() throws Exception {
    tcp.limits(HostileRequestsTest.defaultLimits().withIdle(Duration.ofMillis(300)));
    LogCapture idle = new LogCapture(InboundConnection.class);
    try (RawFabricPeer stranger = new RawFabricPeer();
        RawFabricPeer.Conn strangers = stranger.connect();
        RawFabricPeer.Conn peers = fx.peer.connect()) {
      assertTrue(strangers.closedWithin(3000), "nobody here talks to it: its place is freed");
      idle.await(3000, stranger.address().toString(), "pekko-rdma.soft.fabric.idle-timeout");
      assertFalse(peers.closedWithin(500), "the victim's QP talks to its peer: kept");
      byte[] data = HostileRequestsTest.pattern(32, 4);
      peers.send(fx.write(0, 0, 32).withPayload(data, FabricWire.TRAILER_WHOLE));
      assertEquals(SoftPeer.Response.ACK, peers.readFrame(5000).opcodeOrCode);
    } finally {
      idle.close();
    }
  }

  @Test
  void requestsForUnknownOrUnconnectedQpsAreCountedAndLoggedNamingThePeer() throws Exception {
    long unknown = counter("unknown_qpn_request");
    long refused = counter("refused_request");
    try (RawFabricPeer.Conn c = fx.otherPeer.connect()) {
      RawFabricPeer.Frame guess = fx.write(0, 0, 8);
      guess.destQpn = (fx.victim.qpNum() + 1) & 0xffffff;
      c.send(guess.withPayload(new byte[8], FabricWire.TRAILER_WHOLE));
      c.send(fx.write(0, 0, 8).withPayload(new byte[8], FabricWire.TRAILER_WHOLE));
      log.await(5000, "the process at " + fx.otherPeer.address(), "has no such QP");
      log.await(5000, "the process at " + fx.otherPeer.address(), "not connected to it");
    }
    assertEquals(unknown + 1, counter("unknown_qpn_request"));
    assertEquals(refused + 1, counter("refused_request"));
  }

  @Test
  void silentConnectionsHoldNoPlaceAndAreClosedAtTheirDeadline() throws Exception {
    tcp.limits(HostileRequestsTest.defaultLimits().withMaxConnections(3).withMaxHandshakes(2)
        .withHandshake(Duration.ofMillis(800)));
    Socket[] silent = new Socket[10];
    try {
      for (int i = 0; i < silent.length; i++) {
        silent[i] = new Socket();
        silent[i].connect(RawFabricPeer.ours().socketAddress(), 5000);
      }
      long start = System.nanoTime();
      try (RawFabricPeer.Conn c = fx.peer.connect()) { // a real peer gets in meanwhile
        assertTrue(System.nanoTime() - start < 500_000_000L, "at once: silent ones wait nowhere");
        c.send(fx.write(0, 0, 8).withPayload(HostileRequestsTest.pattern(8, 1), FabricWire.TRAILER_WHOLE));
        assertEquals(SoftPeer.Response.ACK, c.readFrame(5000).opcodeOrCode);
      }
      for (Socket s : silent) { // the silent ones are closed at their handshake deadline
        s.setSoTimeout(5000);
        assertEquals(-1, s.getInputStream().read(), "a silent connection is closed");
      }
      assertTrue(System.nanoTime() - start < 3_000_000_000L, "by their deadline");
      log.await(5000, "no handshake within 800 ms", "sending its opening",
          "pekko-rdma.soft.fabric.handshake-timeout");
    } finally {
      for (Socket s : silent) if (s != null) s.close();
      HostileRequestsTest.defaults(tcp);
    }
  }

  @Test
  void moreProcessesThanMaxConnectionsAreRefusedNamingTheSetting() throws Exception {
    tcp.limits(HostileRequestsTest.defaultLimits().withMaxConnections(1));
    try (RawFabricPeer third = new RawFabricPeer();
        RawFabricPeer.Conn first = fx.peer.connect()) {
      RawFabricPeer.Refused refused = assertThrows(RawFabricPeer.Refused.class,
          third::connect);
      assertEquals(FabricWire.BUSY, refused.code);
      assertTrue(refused.getMessage().contains("pekko-rdma.soft.fabric.max-connections"),
          refused.getMessage());
      log.await(5000, third.address().toString(), "pekko-rdma.soft.fabric.max-connections");
      // the process served may open another connection, which takes its first one's place
      try (RawFabricPeer.Conn second = fx.peer.connect()) {
        assertTrue(first.closedWithin(5000), "the older connection is closed");
        second.send(fx.write(0, 0, 8).withPayload(HostileRequestsTest.pattern(8, 2), FabricWire.TRAILER_WHOLE));
        assertEquals(SoftPeer.Response.ACK, second.readFrame(5000).opcodeOrCode);
      }
    } finally {
      HostileRequestsTest.defaults(tcp);
    }
  }

  /** A QP of ours connected to {@code peer}, with a WRITE posted: our fabric dials it. */
  private QueuePair writingTo(RawFabricPeer peer, int timeout, int retry) {
    QueuePair qp = fx.pd.createQp(QpInitAttributes.of(QpType.RC, fx.cq, fx.cq));
    HostileFabric.connect(qp, peer.gid(1), HostileFabric.PEER_QPN, timeout, retry);
    try (SendRequests s = new SendRequests(1, 1)) {
      s.add(1, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(fx.region.mr, 0, 8)
          .rdma(0x1000, 0x77);
      qp.postSend(s);
    }
    return qp;
  }

  private WcStatus await() throws InterruptedException {
    try (WorkCompletions wc = new WorkCompletions(4)) {
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (System.nanoTime() < deadline) {
        if (fx.cq.poll(wc) > 0) return wc.status(0);
        Thread.sleep(1);
      }
    }
    throw new AssertionError("no completion");
  }

  private long counter(String name) {
    return fx.ctx.queryPortCounters(1).all().get(name);
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] all = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }
}
