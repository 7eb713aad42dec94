package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.WcOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The connection manager within one JVM: connect, accept, reject, disconnect. */
class CmConformanceTest extends ConformanceTest {
  static final Duration T = ConformanceProvider.TIMEOUT;
  /** TIMEWAIT lasts a while on real fabrics. */
  static final Duration TIMEWAIT = Duration.ofSeconds(10);

  @BeforeEach
  void needsCm() {
    requireFeature(Feature.CONNECTION_MANAGER);
  }

  static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  static InetAddress cmAddress() {
    try {
      return InetAddress.getByName(ConformanceProvider.cmAddress());
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The next event of {@code type} (for {@code id} when not null); fails listing the others. */
  static CmEvent awaitCm(CmEventChannel ch, CmEventType type, CmId id, String what,
      Duration timeout) {
    List<CmEvent> others = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        fail("expected " + type + " (" + what + ") within " + timeout.toMillis() + " ms; got "
            + (others.isEmpty() ? "nothing" : others));
      }
      CmEvent e = ch.awaitEvent(Duration.ofNanos(left));
      if (e == null) continue;
      if (e.type() == type && (id == null || e.id() == id)) return e;
      others.add(e);
    }
  }

  static void assertStartsWith(byte[] expected, byte[] actual, String what) {
    assertNotNull(actual, what + ": no private data");
    assertTrue(actual.length >= expected.length, what + ": " + actual.length
        + " bytes of private data, expected at least " + expected.length);
    assertBytes(expected, Arrays.copyOf(actual, expected.length), what);
  }

  /**
   * One end of a connection: its id and, once created, its PD, CQs, QP and buffer. Sends and
   * receives complete on separate CQs: a peer's answer may arrive before the acknowledgement of
   * what it answers.
   */
  static final class Side implements AutoCloseable {
    final CmId id;
    ProtectionDomain pd;
    CompletionQueue cq;
    CompletionQueue recvCq;
    Region region;

    Side(CmId id) {
      this.id = id;
    }

    QueuePair qp() {
      return id.qp();
    }

    void createQp() {
      assertNotNull(id.verbs(), "verbs() of a resolved or requested id");
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(32, null);
      recvCq = id.verbs().createCq(32, null);
      QueuePair qp = id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, recvCq).maxSendWr(16)
          .maxRecvWr(16));
      assertSame(qp, id.qp(), "qp() after createQp");
      region = Region.of(pd, 8192, Link.ALL_REMOTE);
    }

    @Override
    public void close() {
      if (id.qp() != null) id.destroyQp();
      if (region != null) region.close();
      if (recvCq != null) recvCq.close();
      if (cq != null) cq.close();
      if (pd != null) pd.close();
      id.close();
    }
  }

  /** Two channels, a listener on the CM address, and a client id. */
  final class Setup implements AutoCloseable {
    final CmEventChannel serverCh = fx.provider.createCmEventChannel();
    final CmEventChannel clientCh = fx.provider.createCmEventChannel();
    final CmId listener;
    final Side client;
    Side server;
    final InetSocketAddress address;

    Setup(boolean listen) {
      listener = serverCh.createId("listener");
      listener.bind(new InetSocketAddress(cmAddress(), 0));
      int port = listener.localAddress().getPort();
      assertTrue(port > 0, "port after bind(0): " + port);
      address = new InetSocketAddress(cmAddress(), port);
      if (listen) listener.listen(4);
      client = new Side(clientCh.createId("client"));
      assertEquals("client", client.id.context(), "context of the id");
    }

    void resolve() {
      client.id.resolveAddress(null, address, Duration.ofSeconds(2));
      awaitCm(clientCh, CmEventType.ADDR_RESOLVED, client.id, "client resolves " + address, T);
      assertNotNull(client.id.verbs(), "verbs() after ADDR_RESOLVED");
      client.id.resolveRoute(Duration.ofSeconds(2));
      awaitCm(clientCh, CmEventType.ROUTE_RESOLVED, client.id, "client resolves the route", T);
    }

    /** The server's CONNECT_REQUEST for a connect with {@code hello}. */
    CmEvent request(byte[] hello) {
      client.createQp();
      client.id.connect(ConnectionParameters.withPrivateData(hello));
      CmEvent req = awaitCm(serverCh, CmEventType.CONNECT_REQUEST, null, "server", T);
      assertSame(listener, req.listenId(), "listenId of " + req);
      assertNotNull(req.id(), "id of " + req);
      assertNotSame(listener, req.id(), "a new id for the connection");
      server = new Side(req.id());
      assertStartsWith(hello, req.privateData(), "private data of the connect request");
      return req;
    }

    /** Connects and accepts; returns the client's ESTABLISHED. */
    CmEvent establish(byte[] hello, byte[] welcome) {
      resolve();
      request(hello);
      server.createQp();
      postRecv(server.qp(), 100, server.region, 0, 1024);
      postRecv(client.qp(), 200, client.region, 0, 1024);
      server.id.accept(ConnectionParameters.withPrivateData(welcome));
      CmEvent est = awaitCm(clientCh, CmEventType.ESTABLISHED, client.id, "client", T);
      awaitCm(serverCh, CmEventType.ESTABLISHED, server.id, "server", T);
      assertStartsWith(welcome, est.privateData(), "private data of the accept");
      assertEquals(QpState.RTS, client.qp().state(), "client QP after ESTABLISHED");
      assertEquals(QpState.RTS, server.qp().state(), "server QP after ESTABLISHED");
      return est;
    }

    @Override
    public void close() {
      RuntimeException first = null;
      for (AutoCloseable c : new AutoCloseable[] {server, client, listener, serverCh, clientCh}) {
        if (c == null) continue;
        try {
          c.close();
        } catch (Exception e) {
          RuntimeException r = e instanceof RuntimeException ? (RuntimeException) e
              : new RuntimeException(e);
          if (first == null) first = r; else first.addSuppressed(r);
        }
      }
      if (first != null) throw first;
    }
  }

  @Test
  void connectAcceptEstablishedAndData() {
    try (Setup s = new Setup(true)) {
      s.establish(ascii("hello-cm"), ascii("welcome"));
      byte[] ping = Region.pattern(64, 40);
      s.client.region.put(4096, ping);
      send(s.client.qp(), 1, SIGNALED, s.client.region, 4096, 64);
      Completions.awaitSuccess(s.client.cq, "client CQ", 1, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(s.server.recvCq, "server recv CQ", 100, WcOpcode.RECV);
      assertEquals(64, r.byteLen(), r.toString());
      assertEquals(s.server.qp().qpNum(), r.qpNum(), r.toString());
      assertBytes(ping, s.server.region.get(0, 64), "client -> server");

      byte[] pong = Region.pattern(100, 41);
      s.server.region.put(4096, pong);
      send(s.server.qp(), 2, SIGNALED, s.server.region, 4096, 100);
      Completions.awaitSuccess(s.server.cq, "server CQ", 2, WcOpcode.SEND);
      Completions.awaitSuccess(s.client.recvCq, "client recv CQ", 200, WcOpcode.RECV);
      assertBytes(pong, s.client.region.get(0, 100), "server -> client");

      write(s.client.qp(), 3, SIGNALED, s.client.region, 4096, 64,
          s.server.region.address(2048), s.server.region.rkey());
      Completions.awaitSuccess(s.client.cq, "client CQ", 3, WcOpcode.RDMA_WRITE);
      assertBytes(ping, s.server.region.get(2048, 64), "RDMA write over the CM connection");

      s.client.id.disconnect();
      awaitCm(s.clientCh, CmEventType.DISCONNECTED, s.client.id, "client", T);
      awaitCm(s.serverCh, CmEventType.DISCONNECTED, s.server.id, "server", T);
    }
  }

  @Test
  void rejectCarriesPrivateData() {
    try (Setup s = new Setup(true)) {
      s.resolve();
      s.request(ascii("may I"));
      byte[] no = ascii("no: conformance says so");
      s.server.id.reject(no);
      CmEvent rej = awaitCm(s.clientCh, CmEventType.REJECTED, s.client.id, "client", T);
      assertEquals(CmEvent.REJECT_CONSUMER_DEFINED, rej.status(), "reject reason of " + rej);
      assertStartsWith(no, rej.privateData(), "private data of the reject");
    }
  }

  @Test
  void connectWithoutListenerIsRejected() {
    try (Setup s = new Setup(false)) {
      s.resolve();
      s.client.createQp();
      s.client.id.connect(ConnectionParameters.defaults());
      CmEvent rej = awaitCm(s.clientCh, CmEventType.REJECTED, s.client.id,
          "client connecting to " + s.address + " where nobody listens", T);
      assertEquals(CmEvent.REJECT_NO_LISTENER, rej.status(), "reject reason of " + rej);
    }
  }

  private void disconnectBy(boolean client) {
    try (Setup s = new Setup(true)) {
      s.establish(ascii("hi"), ascii("ho"));
      (client ? s.client : s.server).id.disconnect();
      awaitCm(s.clientCh, CmEventType.DISCONNECTED, s.client.id, "client", T);
      awaitCm(s.serverCh, CmEventType.DISCONNECTED, s.server.id, "server", T);
      awaitCm(s.clientCh, CmEventType.TIMEWAIT_EXIT, s.client.id, "client", TIMEWAIT);
      awaitCm(s.serverCh, CmEventType.TIMEWAIT_EXIT, s.server.id, "server", TIMEWAIT);
      // the connection is gone: what the client posts now is flushed
      send(s.client.qp(), 9, SIGNALED, s.client.region, 0, 8);
      List<Wc> flushed = Completions.drain(s.client.cq, ConformanceProvider.QUIET);
      assertTrue(flushed.stream().anyMatch(w -> w.wrId() == 9 && !w.ok()),
          "a send after DISCONNECTED must complete in error: " + flushed);
    }
  }

  @Test
  void disconnectByTheClient() {
    disconnectBy(true);
  }

  @Test
  void disconnectByTheServer() {
    disconnectBy(false);
  }

  @Test
  void oversizedConnectPrivateDataIsRefused() {
    try (Setup s = new Setup(true)) {
      s.resolve();
      s.client.createQp();
      byte[] big = new byte[ConnectionParameters.MAX_CONNECT_PRIVATE_DATA + 1];
      assertRejected(() -> s.client.id.connect(ConnectionParameters.withPrivateData(big)),
          "connect with " + big.length + " bytes of private data",
          String.valueOf(ConnectionParameters.MAX_CONNECT_PRIVATE_DATA));
    }
  }

  @Test
  void idsAreCountedAndChannelWontCloseWhileUsed() {
    int before = fx.provider.liveResources().cmIds();
    CmEventChannel ch = fx.provider.createCmEventChannel();
    try {
      CmId id = ch.createId(null);
      assertEquals(before + 1, fx.provider.liveResources().cmIds(), "CM ids after createId");
      RdmaException e = assertRdma(RdmaException.EBUSY, ch::close,
          "closing a CM event channel with a live id");
      assertMentionsAnyIgnoreCase(e, "closing a busy CM channel", "id");
      id.close();
    } finally {
      ch.close();
    }
    assertEquals(before, fx.provider.liveResources().cmIds(), "CM ids after close");
  }
}
