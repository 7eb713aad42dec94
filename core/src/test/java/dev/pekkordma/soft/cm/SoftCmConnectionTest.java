package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.io.IOException;
import java.net.ConnectException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Connections through the soft CM with QPs on both sides, and how they end. */
class SoftCmConnectionTest extends CmFixture {
  private CmEventChannel serverChannel;
  private CmEventChannel clientChannel;
  private CmId listener;
  private Side server;
  private Side client;
  private byte[] acceptData;

  private static byte[] text(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * Connects a client to a listener, both with QPs; the server posts {@code serverRecvs}
   * receives before accepting and tells the client its buffer's address and rkey in the accept's
   * private data, the usual way.
   */
  private void connect(int serverRecvs) {
    serverChannel = channel();
    clientChannel = channel();
    listener = listener(serverChannel);
    client = new Side(resolved(clientChannel, listener.localAddress()));
    assertEquals(QpState.INIT, client.qp.state(), "rdma_create_qp leaves the QP in INIT");
    client.id.connect(new ConnectionParameters(text("hello"), 2, 3, 6, 5));

    CmEvent request = expect(serverChannel, CmEventType.CONNECT_REQUEST);
    assertSame(listener, request.listenId());
    assertNotSame(listener, request.id());
    assertEquals("listener", request.id().context(), "a request's id has the listener's context");
    assertArrayEquals(text("hello"), request.privateData());
    // as rdma_cm reports them: from the server's point of view
    assertEquals(3, request.parameters().responderResources());
    assertEquals(2, request.parameters().initiatorDepth());
    assertEquals(6, request.parameters().retryCount());
    assertEquals(5, request.parameters().rnrRetryCount());
    assertEquals(client.id.localAddress(), request.id().remoteAddress());
    assertEquals(listener.localAddress(), request.id().localAddress());

    server = new Side(request.id());
    if (serverRecvs > 0) server.postRecvs(100, serverRecvs);
    byte[] where = ByteBuffer.allocate(12).putLong(server.mr.address() + 2048)
        .putInt(server.mr.rkey()).array();
    server.id.accept(ConnectionParameters.withPrivateData(where));

    CmEvent established = expect(clientChannel, CmEventType.ESTABLISHED);
    acceptData = established.privateData();
    assertArrayEquals(where, acceptData);
    expect(serverChannel, CmEventType.ESTABLISHED);
    assertEquals(QpState.RTS, client.qp.state());
    assertEquals(QpState.RTS, server.qp.state());
  }

  private void closeAll() {
    client.close();
    server.close();
    listener.close();
  }

  @Test
  void connectAcceptThenSendAndRdmaWrite() {
    connect(1);
    ByteBuffer where = ByteBuffer.wrap(acceptData);
    long remote = where.getLong();
    int rkey = where.getInt();

    client.buffer.put(0, text("over the CM"), 0, 11);
    try (SendRequests s = new SendRequests(2, 1)) {
      s.add(1, WrOpcode.SEND, SendRequests.SIGNALED).sge(client.mr, 0, 11);
      s.add(2, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(client.mr, 0, 11).rdma(remote, rkey);
      client.qp.postSend(s);
    }
    assertEquals(List.of("1:SUCCESS", "2:SUCCESS"), client.completions(2));
    assertEquals(List.of("100:SUCCESS"), server.completions(1));
    assertEquals(11, server.wc.byteLength(0));
    byte[] got = new byte[11];
    server.buffer.get(1024, got, 0, 11);
    assertEquals("over the CM", new String(got, StandardCharsets.US_ASCII));
    server.buffer.get(2048, got, 0, 11);
    assertEquals("over the CM", new String(got, StandardCharsets.US_ASCII), "the RDMA write");

    client.id.disconnect();
    expect(clientChannel, CmEventType.DISCONNECTED);
    expect(serverChannel, CmEventType.DISCONNECTED);
    closeAll();
  }

  @Test
  void deadlinesThatWereMetLeaveTheTimer() {
    connect(0);
    // the address, route, connect and accept deadlines were all met: none waits to fire late
    assertEquals(0, ((SoftCmEventChannel) clientChannel).scheduled());
    assertEquals(0, ((SoftCmEventChannel) serverChannel).scheduled());
    client.id.disconnect();
    expect(clientChannel, CmEventType.DISCONNECTED);
    expect(serverChannel, CmEventType.DISCONNECTED);
    expect(clientChannel, CmEventType.TIMEWAIT_EXIT);
    expect(serverChannel, CmEventType.TIMEWAIT_EXIT);
    assertEquals(0, ((SoftCmEventChannel) clientChannel).scheduled());
    assertEquals(0, ((SoftCmEventChannel) serverChannel).scheduled());
    closeAll();
  }

  @Test
  void connectsAcrossTwoProviders() {
    // two provider instances: two devices with their own GIDs, as two nodes would have
    try (RdmaProvider other = newProvider()) {
      serverChannel = channel();
      clientChannel = channel(other);
      listener = listener(serverChannel);
      client = new Side(resolved(clientChannel, listener.localAddress()));
      assertNotEquals(client.id.verbs().queryGid(1, 0), listener.verbs().queryGid(1, 0));
      client.id.connect(ConnectionParameters.defaults());
      server = new Side(expect(serverChannel, CmEventType.CONNECT_REQUEST).id());
      server.postRecvs(100, 1);
      server.id.accept(ConnectionParameters.defaults());
      expect(clientChannel, CmEventType.ESTABLISHED);
      expect(serverChannel, CmEventType.ESTABLISHED);

      client.buffer.put(0, text("node to node"), 0, 12);
      try (SendRequests s = new SendRequests(1, 1)) {
        s.add(1, WrOpcode.SEND, SendRequests.SIGNALED).sge(client.mr, 0, 12);
        client.qp.postSend(s);
      }
      assertEquals(List.of("1:SUCCESS"), client.completions(1));
      assertEquals(List.of("100:SUCCESS"), server.completions(1));
      byte[] got = new byte[12];
      server.buffer.get(1024, got, 0, 12);
      assertEquals("node to node", new String(got, StandardCharsets.US_ASCII));

      server.id.disconnect();
      expect(clientChannel, CmEventType.DISCONNECTED);
      expect(serverChannel, CmEventType.DISCONNECTED);
      closeAll();
      clientChannel.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), other.liveResources());
    }
  }

  @ParameterizedTest(name = "disconnect by the {0}")
  @ValueSource(strings = {"client", "server"})
  void disconnectFromEitherSideFlushesBothQps(String who) {
    connect(2);
    client.postRecvs(200, 3);
    Side initiator = who.equals("client") ? client : server;
    CmEventChannel initiatorChannel = who.equals("client") ? clientChannel : serverChannel;
    CmEventChannel otherChannel = who.equals("client") ? serverChannel : clientChannel;

    initiator.id.disconnect();
    assertEquals(QpState.ERR, initiator.qp.state(), "rdma_disconnect moves its QP to ERR at once");
    // as the kernel's rdma_disconnect, a second call succeeds and changes nothing
    initiator.id.disconnect();

    expect(otherChannel, CmEventType.DISCONNECTED);
    expect(initiatorChannel, CmEventType.DISCONNECTED);
    // and so does one after the peer has gone
    (initiator == client ? server : client).id.disconnect();
    assertEquals(QpState.ERR, client.qp.state());
    assertEquals(QpState.ERR, server.qp.state());
    assertEquals(List.of(Side.flushed(200), Side.flushed(201), Side.flushed(202)),
        client.completions(3));
    assertEquals(List.of(Side.flushed(100), Side.flushed(101)), server.completions(2));

    expect(clientChannel, CmEventType.TIMEWAIT_EXIT);
    expect(serverChannel, CmEventType.TIMEWAIT_EXIT);
    client.id.disconnect(); // still a no-op after TIMEWAIT_EXIT
    expectNone(clientChannel, Duration.ofMillis(100));
    expectNone(serverChannel, Duration.ofMillis(100));
    closeAll();
  }

  @Test
  void aVanishingPeerIsSeenAsDisconnected() {
    connect(2);
    ((SoftCmId) client.id).drop(); // the client's process dies: no DREQ, a TCP reset

    expect(serverChannel, CmEventType.DISCONNECTED);
    assertEquals(QpState.ERR, server.qp.state());
    assertEquals(List.of(Side.flushed(100), Side.flushed(101)), server.completions(2));
    expect(serverChannel, CmEventType.TIMEWAIT_EXIT);
    expectNone(clientChannel, Duration.ofMillis(200));
    closeAll();
  }

  @Test
  void closingAnIdWithoutDisconnectingDisconnectsThePeer() {
    connect(1);
    client.close(); // destroyQp then rdma_destroy_id: the CM sends DREQ for it
    expect(serverChannel, CmEventType.DISCONNECTED);
    assertEquals(List.of(Side.flushed(100)), server.completions(1));
    expectNone(clientChannel, Duration.ofMillis(200));
    server.close();
    listener.close();
  }

  @Test
  void deviceRemovalReachesEveryIdOnTheDevice() {
    connect(0);
    FaultInjection.of(provider).get().deviceFatal(client.id.verbs());
    // one device serves all three ids here
    CmEvent[] seen = {expect(serverChannel, CmEventType.DEVICE_REMOVAL),
        expect(serverChannel, CmEventType.DEVICE_REMOVAL),
        expect(clientChannel, CmEventType.DEVICE_REMOVAL)};
    assertEquals(Set.of(listener, server.id),
        Set.of(seen[0].id(), seen[1].id()));
    assertSame(client.id, seen[2].id());
    expectNone(serverChannel, Duration.ofMillis(100));
    RuntimeException e = assertThrows(RuntimeException.class, client.id::disconnect);
    assertTrue(e.getMessage().contains("DEVICE_REMOVAL"), e.getMessage());
    client.close();
    expectNone(serverChannel, Duration.ofMillis(100)); // no DISCONNECTED for a removed id
    server.close();
    listener.close();
  }

  @Test
  void deviceRemovalOfTheListenersDeviceStopsListening() throws IOException {
    serverChannel = channel();
    listener = listener(serverChannel);
    FaultInjection.of(provider).get().deviceFatal(listener.verbs());
    expect(serverChannel, CmEventType.DEVICE_REMOVAL);
    try (Socket probe = new Socket()) {
      try {
        probe.connect(listener.localAddress(), 1000);
      } catch (ConnectException expected) {
        listener.close();
        return;
      }
      // say who answered: seen twice while other JVMs on the machine were binding ports
      Process ss = new ProcessBuilder("sh", "-c",
          "ss -tanp | grep 'pid=" + ProcessHandle.current().pid() + ",'")
          .redirectErrorStream(true).start();
      fail("something answers on " + listener.localAddress() + " (probe from "
          + probe.getLocalSocketAddress() + "):\n" + new String(ss.getInputStream().readAllBytes()));
    }
    listener.close();
  }

  @Test
  void aQpTheCmCannotMoveEndsInConnectError() {
    serverChannel = channel();
    clientChannel = channel();
    listener = listener(serverChannel);
    client = new Side(resolved(clientChannel, listener.localAddress()));
    client.id.connect(ConnectionParameters.defaults());
    server = new Side(expect(serverChannel, CmEventType.CONNECT_REQUEST).id());
    // the client's QP leaves INIT behind the CM's back before the REP arrives
    client.qp.modify(new QpAttributes().state(QpState.ERR));
    server.id.accept(ConnectionParameters.defaults());

    CmEvent error = expect(clientChannel, CmEventType.CONNECT_ERROR);
    assertEquals(-22, error.status(), "the modify's EINVAL, negated as librdmacm reports it");
    CmEvent rejected = expect(serverChannel, CmEventType.REJECTED);
    assertEquals(CmEvent.REJECT_CONSUMER_DEFINED, rejected.status());
    closeAll();
  }
}
