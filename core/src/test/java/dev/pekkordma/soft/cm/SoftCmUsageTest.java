package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Binding, and what the CM refuses: wrong call order, bad input, use after destruction. */
class SoftCmUsageTest extends CmFixture {
  private static RdmaException fails(String verb, int errno, String mentions, Executable call) {
    RdmaException e = assertThrows(RdmaException.class, call);
    assertEquals(verb, e.verb(), e.getMessage());
    assertEquals(errno, e.errno(), e.getMessage());
    assertTrue(e.getMessage().contains(mentions), "'" + e.getMessage() + "' should mention '"
        + mentions + "'");
    return e;
  }

  private static final int EINVAL = RdmaException.EINVAL;

  @Test
  void bindTakesARealPortAndTheDevice() throws IOException {
    CmEventChannel ch = channel();
    CmId a = ch.createId("a");
    assertEquals(1, provider.liveResources().cmIds());
    assertNull(a.verbs());
    assertEquals(0, a.portNum());
    a.bind(LOOPBACK_ANY_PORT);
    InetSocketAddress at = a.localAddress();
    assertNotEquals(0, at.getPort());
    assertNotNull(a.verbs());
    assertEquals(1, a.portNum());
    assertEquals(new InetSocketAddress("0.0.0.0", 0), a.remoteAddress()); // as the kernel's
    assertEquals("a", a.context());
    assertSame(ch, a.channel());

    CmId b = ch.createId("b");
    fails("rdma_bind_addr", RdmaException.EADDRINUSE, "in use", () -> b.bind(at));
    fails("rdma_bind_addr", RdmaException.EADDRINUSE, "in use",
        () -> b.bind(new InetSocketAddress("0.0.0.0", at.getPort())));
    try (ServerSocket foreign = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      fails("rdma_bind_addr", RdmaException.EADDRINUSE, "in use",
          () -> b.bind(new InetSocketAddress("127.0.0.1", foreign.getLocalPort())));
    }
    // TEST-NET-3: on no interface here (only interfaces are consulted)
    fails("rdma_bind_addr", RdmaException.ENODEV, "203.0.113.9",
        () -> b.bind(new InetSocketAddress("203.0.113.9", 0)));
    fails("rdma_bind_addr", EINVAL, "address is null", () -> b.bind(null));
    fails("rdma_bind_addr", EINVAL, "in state ADDR_BOUND", () -> a.bind(LOOPBACK_ANY_PORT));

    a.close();
    b.bind(at); // the port is free again once its id is gone
    assertEquals(at, b.localAddress());
    b.close();
    assertEquals(0, provider.liveResources().cmIds());
  }

  @Test
  void aWildcardListenerTakesLoopbackConnections() {
    CmEventChannel ch = channel();
    CmId listener = ch.createId(null);
    listener.bind(new InetSocketAddress("0.0.0.0", 0));
    listener.listen(0); // 0: the default backlog
    assertNotNull(listener.verbs());
    int port = listener.localAddress().getPort();
    CmId client = resolved(ch, new InetSocketAddress("127.0.0.1", port));
    client.connect(ConnectionParameters.defaults());
    CmId request = expect(ch, CmEventType.CONNECT_REQUEST).id();
    assertEquals(new InetSocketAddress("127.0.0.1", port), request.localAddress());
    assertEquals(client.localAddress(), request.remoteAddress());
    assertEquals(new InetSocketAddress("127.0.0.1", port), client.remoteAddress());
    request.accept(ConnectionParameters.defaults());
    expect(ch, CmEventType.ESTABLISHED);
    expect(ch, CmEventType.ESTABLISHED);
    client.close(); // destroying an established id disconnects its peer
    CmEvent gone = expect(ch, CmEventType.DISCONNECTED);
    assertSame(request, gone.id());
    request.close();
    listener.close();
  }

  @Test
  void callsOutOfOrderNameTheState() {
    CmEventChannel ch = channel();
    CmId id = ch.createId(null);
    fails("rdma_listen", EINVAL, "in state IDLE", () -> id.listen(4));
    fails("rdma_resolve_route", EINVAL, "in state IDLE", () -> id.resolveRoute(WAIT));
    fails("rdma_connect", EINVAL, "in state IDLE", () -> id.connect(ConnectionParameters.defaults()));
    fails("rdma_accept", EINVAL, "in state IDLE", () -> id.accept(ConnectionParameters.defaults()));
    fails("rdma_reject", EINVAL, "in state IDLE", () -> id.reject(null));
    fails("rdma_disconnect", EINVAL, "in state IDLE", id::disconnect);
    fails("rdma_destroy_qp", EINVAL, "has no QP", id::destroyQp);

    CmId listener = listener(ch);
    fails("rdma_accept", EINVAL, "in state LISTEN",
        () -> listener.accept(ConnectionParameters.defaults()));
    fails("rdma_listen", EINVAL, "in state LISTEN", () -> listener.listen(4));

    id.resolveAddress(null, listener.localAddress(), WAIT);
    expect(ch, CmEventType.ADDR_RESOLVED);
    fails("rdma_connect", EINVAL, "in state ADDR_RESOLVED",
        () -> id.connect(ConnectionParameters.defaults()));
    fails("rdma_resolve_addr", EINVAL, "in state ADDR_RESOLVED",
        () -> id.resolveAddress(null, listener.localAddress(), WAIT));
    id.resolveRoute(WAIT);
    expect(ch, CmEventType.ROUTE_RESOLVED);
    fails("rdma_disconnect", EINVAL, "in state ROUTE_RESOLVED", id::disconnect);
    fails("rdma_listen", EINVAL, "in state ROUTE_RESOLVED", () -> id.listen(1));
    id.close();
    listener.close();
  }

  @Test
  void badInputIsRefusedWithTheLimit() {
    CmEventChannel ch = channel();
    CmId listener = listener(ch);
    fails("rdma_listen", EINVAL, "negative", () -> {
      CmId other = ch.createId(null);
      try {
        other.bind(LOOPBACK_ANY_PORT);
        other.listen(-1);
      } finally {
        other.close();
      }
    });
    CmId id = ch.createId(null);
    fails("rdma_resolve_addr", EINVAL, "destination is null",
        () -> id.resolveAddress(null, null, WAIT));
    fails("rdma_resolve_addr", EINVAL, "port 0",
        () -> id.resolveAddress(null, new InetSocketAddress("127.0.0.1", 0), WAIT));
    fails("rdma_resolve_addr", EINVAL, "timeout must be positive",
        () -> id.resolveAddress(null, listener.localAddress(), Duration.ZERO));
    id.resolveAddress(null, listener.localAddress(), WAIT);
    expect(ch, CmEventType.ADDR_RESOLVED);
    fails("rdma_resolve_route", EINVAL, "timeout must be positive", () -> id.resolveRoute(null));
    id.resolveRoute(WAIT);
    expect(ch, CmEventType.ROUTE_RESOLVED);

    fails("rdma_connect", EINVAL, "57 bytes of private data; at most 56",
        () -> id.connect(ConnectionParameters.withPrivateData(new byte[57])));
    fails("rdma_connect", EINVAL, "retryCount = 8",
        () -> id.connect(new ConnectionParameters(null, 1, 1, 8, 7)));
    fails("rdma_connect", EINVAL, "responderResources = 17 is outside [0, 16]",
        () -> id.connect(new ConnectionParameters(null, 17, 1, 7, 7)));
    fails("rdma_connect", EINVAL, "parameters are null", () -> id.connect(null));

    id.connect(ConnectionParameters.withPrivateData(new byte[56]));
    CmId request = expect(ch, CmEventType.CONNECT_REQUEST).id();
    fails("rdma_accept", EINVAL, "197 bytes of private data; at most 196",
        () -> request.accept(ConnectionParameters.withPrivateData(new byte[197])));
    fails("rdma_reject", EINVAL, "149 bytes of private data; a reject carries at most 148",
        () -> request.reject(new byte[149]));
    fails("rdma_disconnect", EINVAL, "in state CONNECT_REQUEST", request::disconnect);
    request.reject(new byte[148]);
    assertEquals(148, expect(ch, CmEventType.REJECTED).privateData().length);
    request.close();
    id.close();
    listener.close();
  }

  @Test
  void theQpFollowsTheIdsRules() {
    CmEventChannel ch = channel();
    CmId idle = ch.createId(null);
    CmId id = ch.createId(null);
    id.bind(LOOPBACK_ANY_PORT);
    DeviceContext ctx = id.verbs();
    ProtectionDomain pd = ctx.allocPd();
    CompletionQueue cq = ctx.createCq(8, null);
    fails("rdma_create_qp", EINVAL, "in state IDLE",
        () -> idle.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq)));
    fails("rdma_create_qp", EINVAL, "not UD",
        () -> id.createQp(pd, QpInitAttributes.of(QpType.UD, cq, cq)));
    fails("rdma_create_qp", EINVAL, "pd is null",
        () -> id.createQp(null, QpInitAttributes.of(QpType.RC, cq, cq)));
    DeviceContext elsewhere = provider.open(provider.devices().get(0));
    ProtectionDomain otherPd = elsewhere.allocPd();
    fails("rdma_create_qp", EINVAL, "allocate the PD from verbs()",
        () -> id.createQp(otherPd, QpInitAttributes.of(QpType.RC, cq, cq)));
    otherPd.close();
    elsewhere.close();

    QueuePair qp = id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq));
    assertSame(qp, id.qp());
    assertEquals(QpState.INIT, qp.state());
    assertEquals(CmQpSteps.QP_ACCESS, qp.query().accessFlags());
    fails("rdma_create_qp", EINVAL, "already has QP " + qp.qpNum(),
        () -> id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq)));
    fails("rdma_destroy_id", RdmaException.EBUSY, "still has QP " + qp.qpNum(), id::close);
    int qps = provider.liveResources().qps();
    id.destroyQp();
    assertNull(id.qp());
    assertEquals(qps - 1, provider.liveResources().qps());

    // a QP moved on by hand cannot be connected by the CM
    CmId listener = listener(ch);
    CmId client = resolved(ch, listener.localAddress());
    QueuePair moved = client.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq));
    moved.modify(new QpAttributes().state(QpState.ERR));
    fails("rdma_connect", EINVAL, "QP " + moved.qpNum() + " is in ERR",
        () -> client.connect(ConnectionParameters.defaults()));
    client.destroyQp();
    client.close();
    listener.close();
    cq.close();
    pd.close();
    idle.close();
    id.close();
  }

  @Test
  void destroyedIdsAndClosedChannelsRefuseUse() {
    CmEventChannel ch = channel();
    CmId id = ch.createId(null);
    assertNull(ch.awaitEvent(Duration.ofMillis(20)), "no event: null after the timeout");
    fails("rdma_destroy_event_channel", RdmaException.EBUSY, "1 CM id(s) still alive", ch::close);
    id.close();
    id.close(); // destroying twice is harmless, as closing is
    fails("rdma_bind_addr", EINVAL, "destroyed", () -> id.bind(LOOPBACK_ANY_PORT));
    fails("rdma_resolve_addr", EINVAL, "destroyed",
        () -> id.resolveAddress(null, new InetSocketAddress("127.0.0.1", 1), WAIT));
    fails("rdma_connect", EINVAL, "destroyed", () -> id.connect(ConnectionParameters.defaults()));
    ch.close();
    fails("rdma_create_id", EINVAL, "channel is closed", () -> ch.createId(null));
    fails("rdma_get_cm_event", EINVAL, "channel is closed", () -> ch.awaitEvent(WAIT));
    assertEquals(0, provider.liveResources().cmIds());
  }
}
