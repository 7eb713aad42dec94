package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A peer process that does not run our code, sending requests to this process's fabric: every
 * field is checked before it is used, a request reaches only a QP connected to the sender's
 * process, a frame that breaks the protocol ends the connection and fails the QPs connected to
 * that process naming it, and none of it touches memory outside a live registration, allocates
 * what the peer announces, or stops other connections.
 */
class HostileRequestsTest {
  private HostileFabric fx;
  private LogCapture log;

  @BeforeEach
  void setUp() throws IOException {
    fx = new HostileFabric();
    log = new LogCapture(TcpFabric.class);
  }

  @AfterEach
  void tearDown() throws IOException {
    log.close();
    fx.close();
  }

  @Test
  void aWellFormedWriteLandsAndIsAcknowledged() throws Exception {
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      byte[] data = pattern(1000, 3);
      c.send(fx.write(0, 100, data.length).withPayload(data, FabricWire.TRAILER_WHOLE));
      RawFabricPeer.Frame answer = c.readFrame(5000);
      assertNotNull(answer, "an answer");
      assertEquals(SoftPeer.Response.ACK, answer.opcodeOrCode, "ACK");
      assertEquals(HostileFabric.PEER_QPN, answer.destQpn, "addressed to the requester's QP");
      assertArrayEquals(data, fx.region.read(100, data.length));
    }
  }

  @Test
  void aProcessClaimingAnotherProcesssAddressIsRefusedAndLogged() throws Exception {
    try (RawFabricPeer forger = new RawFabricPeer()) {
      RawFabricPeer.Refused refused = assertThrows(RawFabricPeer.Refused.class,
          () -> forger.connectClaiming(fx.peer.address(), false));
      assertEquals(FabricWire.NOT_CONFIRMED, refused.code);
      log.await(5000, "claims to be the fabric at " + fx.peer.address(), "did not confirm");
    }
    fx.otherTrafficGoesOn();
  }

  @Test
  void garbageInsteadOfAHelloIsRefusedAndLogged() throws Exception {
    try (Socket s = new Socket()) {
      s.connect(RawFabricPeer.ours().socketAddress(), 5000);
      s.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789".getBytes());
      s.setSoTimeout(5000);
      assertEquals(-1, s.getInputStream().read(), "our side closes the connection");
    }
    log.await(5000, "not a soft RDMA fabric peer");
    fx.otherTrafficGoesOn();
  }

  @Test
  void aReadRepeatedAtAStalePsnIsAnsweredOnlyAsItWasAndOnlyWhileTheResponderKeepsIt()
      throws Exception {
    long duplicates = counter("duplicate_request");
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      byte[] first = read(c, 0, 0, 64, 64);
      assertArrayEquals(fx.region.read(0, 64), first, "the READ is answered");
      assertArrayEquals(first, read(c, 0, 0, 64, 64), "its repeat too (its answer was lost)");
      // a "repeat" naming other memory, and a PSN never answered: no answer before the barrier
      c.send(readRequest(0, 1024, 128).header());
      c.send(readRequest(0xffffff, 0, 4096).header());
      assertArrayEquals(first, read(c, 0, 0, 64, 64), "the next answer is the barrier's");
      for (int psn = 1; psn <= ResponderResources.SIZE; psn++) read(c, psn, 8, 8, 8);
      int last = ResponderResources.SIZE;
      c.send(readRequest(0, 0, 64).header()); // no longer kept: not answered
      assertArrayEquals(fx.region.read(8, 8), read(c, last, 8, 8, 8), "only the barrier answers");
    }
    assertEquals(QpState.RTS, fx.victim.state());
    assertEquals(duplicates + 6, counter("duplicate_request"), "every repeat is counted");
    fx.otherTrafficGoesOn();
  }

  @Test
  void aRequestFromAProcessTheQpIsNotConnectedToIsRefusedAndDesynchronisesNothing()
      throws Exception {
    byte[] before = fx.region.snapshot();
    try (RawFabricPeer.Conn forged = fx.otherPeer.connect()) {
      // everything right but the process: the QP number and PSN the victim expects
      forged.send(fx.write(fx.epsn, 0, 64).withPayload(pattern(64, 9), FabricWire.TRAILER_WHOLE));
      log.await(5000, "the process at " + fx.otherPeer.address(), "not connected to it");
      assertArrayEquals(before, fx.region.snapshot(), "a refused request wrote nothing");
    }
    // the legitimate peer's request with that PSN is the next one, not a duplicate
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      byte[] data = pattern(64, 4);
      c.send(fx.write(fx.epsn, 0, 64).withPayload(data, FabricWire.TRAILER_WHOLE));
      assertEquals(SoftPeer.Response.ACK, c.readFrame(5000).opcodeOrCode);
      assertArrayEquals(data, fx.region.read(0, 64), "the legitimate write landed");
    }
    assertEquals(QpState.RTS, fx.victim.state());
  }

  @Test
  void aMalformedFrameEndsTheConnectionAndFailsTheQpsConnectedToThatProcessNamingIt()
      throws Exception {
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      RawFabricPeer.Frame f = fx.write(0, 0, 0);
      f.kind = 9;
      c.send(f.header());
      assertTrue(c.closedWithin(5000), "our side drops the connection");
    }
    log.await(5000, fx.peer.address().toString(), "unknown frame kind 9");
    awaitState(QpState.ERR);
    String cause = fx.victim.errorCause().orElseThrow();
    assertTrue(cause.contains(fx.peer.address().toString()) && cause.contains("frame kind 9"),
        cause);
    fx.region.assertCanaries();
    fx.otherTrafficGoesOn();
  }

  @Test
  void aPayloadLongerThanMaxMsgSizeEndsTheConnectionBeforeAnyOfItIsRead() throws Exception {
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      RawFabricPeer.Frame f = fx.write(0, 0, 0);
      f.payloadLength = 1L << 40;
      c.send(f.header());
      assertTrue(c.closedWithin(5000), "our side drops the connection");
    }
    log.await(5000, "payload of " + (1L << 40) + " bytes");
    fx.otherTrafficGoesOn();
  }

  @Test
  void aNegativeLengthEndsTheConnection() throws Exception {
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      RawFabricPeer.Frame f = fx.request(WrOpcode.RDMA_READ, 0);
      f.rkey = fx.region.mr.rkey();
      f.remoteAddress = fx.region.mr.address();
      f.readLength = -5;
      c.send(f.header());
      assertTrue(c.closedWithin(5000), "our side drops the connection");
    }
    log.await(5000, "RDMA READ of -5 bytes");
    fx.otherTrafficGoesOn();
  }

  @Test
  void aHeaderAnnouncingGigabytesAllocatesNothing() throws Exception {
    BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)
        .stream().filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
    long directBefore = direct.getMemoryUsed();
    System.gc();
    long heapBefore = usedHeap();
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      for (int i = 0; i < 8; i++) { // a write of 2 GiB into a 64 KiB region, eight times
        RawFabricPeer.Frame f = fx.write(fx.epsn, 0, 0);
        f.payloadLength = 1L << 31;
        c.send(f.header());
        c.send(new byte[4096]);
        Thread.sleep(20);
      }
      assertTrue(direct.getMemoryUsed() - directBefore < (16 << 20),
          "direct memory grew by " + (direct.getMemoryUsed() - directBefore));
      assertTrue(usedHeap() - heapBefore < (256 << 20),
          "the heap grew by " + (usedHeap() - heapBefore));
    }
    fx.otherTrafficGoesOn();
  }

  @Test
  void aFrameThatStopsMidwayIsDroppedAfterTheFrameTimeout() throws Exception {
    TcpFabric tcp = SoftFabric.get().tcp();
    tcp.limits(defaultLimits().withFrame(Duration.ofMillis(500)));
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      byte[] header = fx.write(0, 0, 64).header();
      c.send(java.util.Arrays.copyOf(header, 30));
      long start = System.nanoTime();
      assertTrue(c.closedWithin(5000), "our side drops the connection");
      assertTrue(System.nanoTime() - start > 300_000_000L, "not before the frame timeout");
      log.await(5000, "frame-timeout");
    } finally {
      defaults(tcp);
    }
    fx.otherTrafficGoesOn();
  }

  @Test
  void aWriteOutsideTheRegionIsRefusedAndTouchesNothing() throws Exception {
    byte[] before = fx.region.snapshot();
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      RawFabricPeer.Frame f = fx.write(0, HostileFabric.REGION - 16, 64); // 48 bytes past the end
      c.send(f.withPayload(pattern(64, 5), FabricWire.TRAILER_WHOLE));
      RawFabricPeer.Frame answer = c.readFrame(5000);
      assertEquals(SoftPeer.Response.NAK_REMOTE_ACCESS, answer.opcodeOrCode);
    }
    assertArrayEquals(before, fx.region.snapshot());
    fx.region.assertCanaries();
    awaitState(QpState.ERR); // as on IB: a remote access error fails the responder QP too
    fx.otherTrafficGoesOn();
  }

  @Test
  void aConnectionThatEndsBeforeItsTrailerIsLostNotABrokenProtocol() throws Exception {
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      byte[] whole = fx.write(0, 0, 64).withPayload(pattern(64, 7), FabricWire.TRAILER_WHOLE);
      c.send(java.util.Arrays.copyOf(whole, whole.length - 1));
    }
    try (RawFabricPeer.Conn c = fx.peer.connect()) { // the peer sends it again, whole
      byte[] data = pattern(64, 8);
      c.send(fx.write(0, 0, 64).withPayload(data, FabricWire.TRAILER_WHOLE));
      RawFabricPeer.Frame answer = c.readFrame(5000);
      assertNotNull(answer, "an answer");
      assertEquals(SoftPeer.Response.ACK, answer.opcodeOrCode, "ACK");
      assertArrayEquals(data, fx.region.read(0, 64));
    }
    Thread.sleep(300); // time for a late verdict on the first connection, if there were one
    assertEquals(QpState.RTS, fx.victim.state(), "failed by a connection that merely ended: "
        + fx.victim.errorCause());
    for (String line : log.lines()) {
      assertFalse(line.contains("trailer"), "logged as a violation: " + line);
    }
  }

  @Test
  void aWriteWhoseSenderAbortedIsNotAcknowledged() throws Exception {
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      c.send(fx.write(0, 0, 64).withPayload(pattern(64, 6), FabricWire.TRAILER_ABORTED));
      assertEquals(null, c.readFrame(300 ), "no answer for a void write");
    } catch (java.net.SocketTimeoutException expected) {
      // nothing came: right
    }
    fx.otherTrafficGoesOn();
  }

  private RawFabricPeer.Frame readRequest(int psn, long offset, long length) {
    RawFabricPeer.Frame f = fx.request(WrOpcode.RDMA_READ, psn);
    f.rkey = fx.region.mr.rkey();
    f.remoteAddress = fx.region.mr.address() + offset;
    f.readLength = length;
    return f;
  }

  /** Sends a READ and returns the data of the next answer, which must be an ACK of it. */
  private byte[] read(RawFabricPeer.Conn c, int psn, long offset, long length, int expected)
      throws IOException {
    c.send(readRequest(psn, offset, length).header());
    RawFabricPeer.Frame answer = c.readFrame(5000);
    assertNotNull(answer, "an answer");
    assertEquals(SoftPeer.Response.ACK, answer.opcodeOrCode, "ACK");
    assertEquals(psn, answer.psn, "the answer's PSN");
    assertEquals(expected, answer.payloadLength, "the answer's length");
    byte[] data = new byte[expected];
    c.in.readFully(data);
    assertEquals(FabricWire.TRAILER_WHOLE, c.in.read(), "the trailer");
    return data;
  }

  private long counter(String name) {
    return fx.ctx.queryPortCounters(1).all().get(name);
  }

  private void awaitState(QpState s) throws InterruptedException {
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (fx.victim.state() != s) {
      assertTrue(System.nanoTime() < deadline, "the victim QP is in " + fx.victim.state()
          + ", not " + s);
      Thread.sleep(5);
    }
  }

  static void defaults(TcpFabric tcp) {
    tcp.limits(defaultLimits());
  }

  /** The limits reference.conf gives. */
  static FabricLimits defaultLimits() {
    return FabricLimits.of(dev.pekkordma.config.RdmaSettings.from(
        com.typesafe.config.ConfigFactory.empty()).soft());
  }

  static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    new java.util.Random(seed).nextBytes(b);
    return b;
  }

  private static long usedHeap() {
    Runtime r = Runtime.getRuntime();
    return r.totalMemory() - r.freeMemory();
  }
}
