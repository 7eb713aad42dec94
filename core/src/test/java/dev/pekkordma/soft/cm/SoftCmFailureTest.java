package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Every way a connection attempt can end other than ESTABLISHED, each ending in an event. */
class SoftCmFailureTest extends CmFixture {
  private static byte[] text(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  @Test
  void rejectCarriesPrivateDataToTheClient() {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    CmId c = resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.withPrivateData(text("let me in")));
    CmEvent request = expect(server, CmEventType.CONNECT_REQUEST);
    assertArrayEquals(text("let me in"), request.privateData());

    request.id().reject(text("not today"));
    CmEvent rejected = expect(client, CmEventType.REJECTED);
    assertEquals(CmEvent.REJECT_CONSUMER_DEFINED, rejected.status());
    assertArrayEquals(text("not today"), rejected.privateData());
    assertSame(c, rejected.id());
    expectNone(server, Duration.ofMillis(100));
    RuntimeException again = assertThrows(RuntimeException.class,
        () -> c.connect(ConnectionParameters.defaults()));
    assertTrue(again.getMessage().contains("in state REJECTED"), again.getMessage());
    request.id().close();
    c.close();
    listener.close();
  }

  @Test
  void connectionsWithoutQpsWork() {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    CmId c = resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.defaults());
    CmId s = expect(server, CmEventType.CONNECT_REQUEST).id();
    s.accept(ConnectionParameters.withPrivateData(text("ok")));
    assertArrayEquals(text("ok"), expect(client, CmEventType.ESTABLISHED).privateData());
    expect(server, CmEventType.ESTABLISHED);
    s.disconnect();
    expect(client, CmEventType.DISCONNECTED);
    expect(server, CmEventType.DISCONNECTED);
    s.close();
    c.close();
    listener.close();
  }

  @Test
  void aPortNobodyListensOnIsRejectedAsNoListener() {
    CmEventChannel client = channel();
    CmEventChannel other = channel();
    // a bound id that does not listen: the port is taken and refuses connections
    CmId bound = other.createId(null);
    bound.bind(LOOPBACK_ANY_PORT);
    CmId c = resolved(client, bound.localAddress());
    c.connect(ConnectionParameters.defaults());
    CmEvent e = expect(client, CmEventType.REJECTED);
    assertEquals(CmEvent.REJECT_NO_LISTENER, e.status());
    expectNone(other, Duration.ofMillis(50));
    c.close();
    bound.close();
  }

  @Test
  void aRemovedDeviceIsAnAddressErrorUntilItComesBack() {
    CmEventChannel client = channel();
    // an id that keeps the device's shared context open, as a listener would
    CmId holder = client.createId(null);
    holder.resolveAddress(null, new InetSocketAddress("127.0.0.1", 4791), WAIT);
    expect(client, CmEventType.ADDR_RESOLVED);
    DeviceContext before = holder.verbs();
    FaultInjection.of(provider).get().deviceFatal(before);
    expect(client, CmEventType.DEVICE_REMOVAL);

    CmId c = client.createId(null);
    c.resolveAddress(null, new InetSocketAddress("127.0.0.1", 4791), WAIT);
    CmEvent e = expect(client, CmEventType.ADDR_ERROR);
    assertEquals(-RdmaException.ENODEV, e.status());
    assertEquals("ADDR_ERROR (status -19, ENODEV)", e.outcome());
    assertNull(c.verbs(), "no device without an address");
    CmId bound = client.createId(null);
    RdmaException refused = assertThrows(RdmaException.class, () -> bound.bind(LOOPBACK_ANY_PORT));
    assertEquals(RdmaException.ENODEV, refused.errno());
    assertTrue(refused.getMessage().contains("DEVICE_FATAL"), refused.getMessage());

    // back again: a new context, not the dead one the holder still has
    FaultInjection.of(provider).get().restoreDevice(before);
    c.resolveAddress(null, new InetSocketAddress("127.0.0.1", 4791), WAIT);
    expect(client, CmEventType.ADDR_RESOLVED);
    assertNotSame(before, c.verbs());
    c.resolveRoute(WAIT);
    expect(client, CmEventType.ROUTE_RESOLVED);
    c.close();
    bound.close();
    holder.close();
  }

  @Test
  void aPeerThatNeverAnswersIsUnreachable() throws IOException {
    CmEventChannel client = channel();
    // a TCP server that takes the connection and the REQ and says nothing
    try (ServerSocket silent = new ServerSocket(0, 4, LOOPBACK_ANY_PORT.getAddress())) {
      CmId c = resolved(client,
          new InetSocketAddress(LOOPBACK_ANY_PORT.getAddress(), silent.getLocalPort()));
      long start = System.nanoTime();
      c.connect(ConnectionParameters.defaults());
      try (Socket accepted = silent.accept()) {
        CmEvent e = expect(client, CmEventType.UNREACHABLE);
        long waited = (System.nanoTime() - start) / 1_000_000;
        assertEquals(-110, e.status(), "ETIMEDOUT");
        assertTrue(waited >= CONNECT_TIMEOUT.toMillis() - 50, "gave up after " + waited + " ms");
      }
      c.close();
    }
  }

  @Test
  void aRequestNobodyAnswersTimesOutOnBothSides() {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    CmId c = resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.defaults());
    CmId request = expect(server, CmEventType.CONNECT_REQUEST).id();
    // the server sits on the request: the client gives up and tells it so
    assertEquals(-110, expect(client, CmEventType.UNREACHABLE).status());
    CmEvent gaveUp = expect(server, CmEventType.REJECTED);
    assertSame(request, gaveUp.id());
    assertEquals(CmMessage.REJECT_TIMEOUT, gaveUp.status());
    RuntimeException late = assertThrows(RuntimeException.class,
        () -> request.accept(ConnectionParameters.defaults()));
    assertTrue(late.getMessage().contains("rdma_accept") && late.getMessage().contains("REJECTED"),
        late.getMessage());
    request.close();
    c.close();
    listener.close();
  }

  @Test
  void destroyingARequestsIdRejectsTheClient() {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    CmId c = resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.defaults());
    expect(server, CmEventType.CONNECT_REQUEST).id().close();
    assertEquals(CmMessage.REJECT_TIMEOUT, expect(client, CmEventType.REJECTED).status());
    c.close();
    listener.close();
  }

  @Test
  void closingAListenerDestroysTheRequestsNobodyHasSeen() throws InterruptedException {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    CmId c = resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.defaults());
    // listener, client, and the request's id once the REQ is in
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (provider.liveResources().cmIds() < 3 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertEquals(3, provider.liveResources().cmIds());
    listener.close();
    assertEquals(1, provider.liveResources().cmIds(), "the unseen request's id went too");
    expectNone(server, Duration.ofMillis(50));
    assertEquals(CmMessage.REJECT_TIMEOUT, expect(client, CmEventType.REJECTED).status());
    c.close();
  }

  @Test
  void garbageOnTheListenersPortIsDroppedWithoutAnEvent() throws IOException {
    CmEventChannel server = channel();
    CmEventChannel client = channel();
    CmId listener = listener(server);
    try (Socket junk = new Socket()) {
      junk.connect(listener.localAddress());
      DataOutputStream out = new DataOutputStream(junk.getOutputStream());
      out.writeInt(9);
      out.write(text("GET / HTTP"), 0, 9);
      out.flush();
      assertEquals(-1, junk.getInputStream().read(), "the listener hangs up on it");
    }
    expectNone(server, Duration.ofMillis(100));
    CmId c = resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.defaults());
    CmId request = expect(server, CmEventType.CONNECT_REQUEST).id();
    request.reject(null);
    assertEquals(0, expect(client, CmEventType.REJECTED).privateData().length);
    request.close();
    c.close();
    listener.close();
  }

  @Test
  void anUnroutableDestinationIsAnAddressError() {
    CmEventChannel client = channel();
    CmId c = client.createId(null);
    // link-local without an interface: no route the kernel could pick (the check sends nothing)
    c.resolveAddress(null, new InetSocketAddress("fe80::1", 4791), WAIT);
    CmEvent e = expect(client, CmEventType.ADDR_ERROR);
    assertTrue(e.status() < 0, "a negative errno: " + e.status());
    assertNull(c.verbs(), "no device without an address");
    // the id is IDLE again and may try elsewhere
    c.resolveAddress(null, new InetSocketAddress("127.0.0.1", 4791), WAIT);
    expect(client, CmEventType.ADDR_RESOLVED);
    assertEquals(1, c.portNum());
    assertEquals(LOOPBACK_ANY_PORT.getAddress(), c.localAddress().getAddress());
    assertNotEquals(0, c.localAddress().getPort(), "resolving takes an ephemeral port");
    c.close();
  }

  @Test
  void aDownPortIsARouteErrorUntilItComesBack() {
    CmEventChannel client = channel();
    CmId c = client.createId(null);
    c.resolveAddress(null, new InetSocketAddress("127.0.0.1", 4791), WAIT);
    expect(client, CmEventType.ADDR_RESOLVED);
    FaultInjection.of(provider).get().setPortState(c.verbs(), 1, false);
    c.resolveRoute(WAIT);
    assertTrue(expect(client, CmEventType.ROUTE_ERROR).status() < 0);
    RuntimeException early = assertThrows(RuntimeException.class,
        () -> c.connect(ConnectionParameters.defaults()));
    assertTrue(early.getMessage().contains("in state ADDR_RESOLVED"), early.getMessage());
    FaultInjection.of(provider).get().setPortState(c.verbs(), 1, true);
    c.resolveRoute(WAIT);
    expect(client, CmEventType.ROUTE_RESOLVED);
    c.close();
  }
}
