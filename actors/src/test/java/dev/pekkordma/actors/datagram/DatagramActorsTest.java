package dev.pekkordma.actors.datagram;

import static dev.pekkordma.actors.TestRdma.CM_DEVICE;
import static dev.pekkordma.actors.TestRdma.CM_HOST;
import static dev.pekkordma.actors.TestRdma.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.actors.CmActor;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.actors.TestRdma;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Datagram endpoints and multicast members through the CM actor, on the provider's CM. */
class DatagramActorsTest {
  static final ActorTestKit kit = ActorTestKit.create("DatagramActorsTest", TestRdma.config(
      CM_DEVICE, "pekko-rdma.soft.devices = [\"soft0\"]\n"
          + "pekko-rdma.cm.connect-timeout = 1s\n"
          + "pekko-rdma.actors.datagram { resolve-timeout = 3s, receive-buffers = 16,"
          + " send-buffers = 4, peer-ttl = 300ms,"
          + " restart-backoff { min-backoff = 50ms, max-backoff = 200ms } }"));
  static final RdmaExtension rdma = RdmaExtension.get(kit.system());
  static final RdmaProvider provider = rdma.provider();
  static final AtomicInteger GROUPS = new AtomicInteger();
  static ResourceCounts baseline;
  private final List<ActorRef<DatagramEndpoint.Command>> endpoints = new ArrayList<>();

  /** What is open before any test: a context per device actor (they open theirs at start). */
  @BeforeAll
  static void baseline() {
    baseline = new ResourceCounts(rdma.deviceNames().size(), 0, 0, 0, 0, 0, 0, 0, 0);
    awaitResources(baseline);
  }

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  /** Every endpoint a test bound is stopped; then nothing it opened is left. */
  @AfterEach
  void nothingLeaks() {
    for (ActorRef<DatagramEndpoint.Command> e : endpoints) e.tell(DatagramEndpoint.Unbind.INSTANCE);
    endpoints.clear();
    awaitResources(baseline);
  }

  static void awaitResources(ResourceCounts expected) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    ResourceCounts now = provider.liveResources();
    while (!now.equals(expected) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      now = provider.liveResources();
    }
    assertEquals(expected, now, "live resources");
  }

  private DatagramEndpoint.Bound bind(TestProbe<DatagramEndpoint.Event> handler) {
    rdma.cm().tell(new CmActor.BindDatagrams(new InetSocketAddress(CM_HOST, 0), handler.getRef()));
    DatagramEndpoint.Bound b = handler.expectMessageClass(DatagramEndpoint.Bound.class, WAIT);
    endpoints.add(b.endpoint());
    return b;
  }

  private static TestProbe<ReceivedDatagram> subscribe(DatagramEndpoint.Bound b) {
    TestProbe<ReceivedDatagram> in = kit.createTestProbe();
    b.endpoint().tell(new DatagramEndpoint.Subscribe(in.getRef()));
    return in;
  }

  static ByteString text(String s) {
    return ByteString.fromString(s);
  }

  @Test
  void datagramsGoBothWaysThroughSidrAndAReplyReachesTheSender() {
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    TestProbe<DatagramEndpoint.Event> hb = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    DatagramEndpoint.Bound b = bind(hb);
    TestProbe<ReceivedDatagram> atA = subscribe(a);
    TestProbe<ReceivedDatagram> atB = subscribe(b);
    TestProbe<SendResult> results = kit.createTestProbe();

    a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("ping"), results.getRef()));
    assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    ReceivedDatagram ping = atB.receiveMessage(WAIT);
    assertEquals("ping", ping.data().utf8String());
    assertEquals(a.qpn(), ping.from().qpn(), "the sender's QP: " + ping.from());
    assertEquals(a.address(), ping.from().address(), "the sender said where it listens");

    b.endpoint().tell(new DatagramEndpoint.Reply(ping.from(), text("pong"), results.getRef()));
    assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    ReceivedDatagram pong = atA.receiveMessage(WAIT);
    assertEquals("pong", pong.data().utf8String());
    assertEquals(b.qpn(), pong.from().qpn());
    assertEquals(b.address(), pong.from().address(), "a peer this side resolved");

    // the other way by address: B knows A from A's request; fewer than A's 16 receives, so
    // none can be dropped however slowly A's actor posts them again
    for (int i = 0; i < 12; i++) {
      b.endpoint().tell(new DatagramEndpoint.Send(a.address(), text("n" + i), null));
    }
    for (int i = 0; i < 12; i++) assertEquals("n" + i, atA.receiveMessage(WAIT).data().utf8String());
  }

  @Test
  void aPeerThatRestartedBehindItsAddressIsReachedOnceItsRouteAged() throws Exception {
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    TestProbe<DatagramEndpoint.Event> hb = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    DatagramEndpoint.Bound b = bind(hb);
    TestProbe<ReceivedDatagram> atB = subscribe(b);
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("one"), null));
    assertEquals("one", atB.receiveMessage(WAIT).data().utf8String());

    // the peer goes and comes back at the same address, with a new QP
    b.endpoint().tell(DatagramEndpoint.Unbind.INSTANCE);
    hb.expectMessageClass(DatagramEndpoint.Unbound.class, WAIT);
    DatagramEndpoint.Bound again = rebind(b.address());
    assertNotEquals(b.qpn(), again.qpn(), "a new QP");
    TestProbe<ReceivedDatagram> atAgain = subscribe(again);
    Thread.sleep(400); // past peer-ttl: A's route to it has aged

    TestProbe<SendResult> results = kit.createTestProbe();
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("two"), results.getRef()));
    assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    assertEquals("two", atAgain.receiveMessage(WAIT).data().utf8String(),
        "the restarted peer heard it");
  }

  /** Binds {@code address} again once the endpoint that held it has let it go. */
  private DatagramEndpoint.Bound rebind(InetSocketAddress address) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      TestProbe<DatagramEndpoint.Event> h = kit.createTestProbe();
      rdma.cm().tell(new CmActor.BindDatagrams(address, h.getRef()));
      DatagramEndpoint.Event e = h.receiveMessage(WAIT);
      if (e instanceof DatagramEndpoint.Bound bound) {
        endpoints.add(bound.endpoint());
        return bound;
      }
      assertTrue(System.nanoTime() < deadline, "still not bound: " + e);
      Thread.sleep(50);
    }
  }

  @Test
  void threeMembersReceiveOneSendAndOneThatLeftDoesNot() {
    InetSocketAddress group = newGroup();
    InetSocketAddress local = new InetSocketAddress(CM_HOST, 0);
    List<MulticastGroup.Joined> members = new ArrayList<>();
    List<TestProbe<ReceivedDatagram>> inboxes = new ArrayList<>();
    List<TestProbe<MulticastGroup.Event>> handlers = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      TestProbe<MulticastGroup.Event> h = kit.createTestProbe();
      TestProbe<ReceivedDatagram> in = kit.createTestProbe();
      rdma.cm().tell(new CmActor.JoinMulticast(group, local, h.getRef(), in.getRef()));
      members.add(h.expectMessageClass(MulticastGroup.Joined.class, WAIT));
      inboxes.add(in);
      handlers.add(h);
    }
    MulticastGroup.Joined sender = members.get(3);
    TestProbe<SendResult> results = kit.createTestProbe();
    sender.member().tell(new MulticastGroup.Send(text("to all"), results.getRef()));
    assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    for (int i = 0; i < 3; i++) {
      ReceivedDatagram r = inboxes.get(i).receiveMessage(WAIT);
      assertEquals("to all", r.data().utf8String(), "member " + i);
    }

    members.get(0).member().tell(MulticastGroup.Leave.INSTANCE);
    MulticastGroup.Left left = handlers.get(0).expectMessageClass(MulticastGroup.Left.class, WAIT);
    assertEquals("left", left.reason());
    sender.member().tell(new MulticastGroup.Send(text("again"), results.getRef()));
    assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    for (int i = 1; i < 3; i++) {
      assertEquals("again", inboxes.get(i).receiveMessage(WAIT).data().utf8String());
    }
    inboxes.get(0).expectNoMessage(Duration.ofMillis(300));
    for (int i = 1; i < 4; i++) {
      members.get(i).member().tell(MulticastGroup.Leave.INSTANCE);
      handlers.get(i).expectMessageClass(MulticastGroup.Left.class, WAIT);
    }
  }

  @Test
  void stoppingFreesEverythingItOpened() {
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    TestProbe<DatagramEndpoint.Event> hb = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    DatagramEndpoint.Bound b = bind(hb);
    TestProbe<ReceivedDatagram> atB = subscribe(b);
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("x"), null));
    atB.receiveMessage(WAIT);
    ResourceCounts busy = provider.liveResources();
    assertTrue(busy.qps() >= baseline.qps() + 3, "two endpoints' QPs and one answer's: " + busy);
    assertTrue(busy.ahs() > baseline.ahs(), "an address handle: " + busy);
    assertTrue(busy.srqs() == baseline.srqs() + 2, "a shared receive queue each: " + busy);

    a.endpoint().tell(DatagramEndpoint.Unbind.INSTANCE);
    assertEquals("unbound",
        ha.expectMessageClass(DatagramEndpoint.Unbound.class, WAIT).reason());
    b.endpoint().tell(DatagramEndpoint.Unbind.INSTANCE);
    hb.expectMessageClass(DatagramEndpoint.Unbound.class, WAIT);
    endpoints.clear();
    awaitResources(baseline);
  }

  @Test
  void anAddressNobodyListensOnFailsNamingThePeer() throws Exception {
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    int port;
    try (DatagramSocket s = new DatagramSocket(0, InetAddress.getByName(CM_HOST))) {
      port = s.getLocalPort();
    }
    InetSocketAddress nobody = new InetSocketAddress(CM_HOST, port);
    TestProbe<SendResult> results = kit.createTestProbe();
    a.endpoint().tell(new DatagramEndpoint.Send(nobody, text("anyone?"), results.getRef()));
    a.endpoint().tell(new DatagramEndpoint.Send(nobody, text("still?"), results.getRef()));
    for (int i = 0; i < 2; i++) {
      SendResult.SendFailed f = results.expectMessageClass(SendResult.SendFailed.class, WAIT);
      assertEquals(nobody, f.to());
      assertTrue(f.reason().startsWith("cannot resolve datagram peer " + CM_HOST + ":" + port
          + ": "), f.reason());
      System.out.println("[actors] sending to " + nobody + ": " + f.reason());
    }
  }

  @Test
  void aDatagramOverThePathMtuIsRefusedNamingBothSizes() {
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    TestProbe<DatagramEndpoint.Event> hb = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    DatagramEndpoint.Bound b = bind(hb);
    TestProbe<SendResult> results = kit.createTestProbe();
    int size = a.maxDatagram() + 1;
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(),
        ByteString.fromArray(new byte[size]), results.getRef()));
    SendResult.SendFailed f = results.expectMessageClass(SendResult.SendFailed.class, WAIT);
    assertTrue(f.reason().contains(size + " bytes") && f.reason().contains("path MTU of "
        + a.maxDatagram() + " bytes"), f.reason());
    assertTrue(f.reason().contains(b.address().getPort() + ""), "names the peer: " + f.reason());
    // a full-sized one goes
    TestProbe<ReceivedDatagram> atB = subscribe(b);
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(),
        ByteString.fromArray(new byte[a.maxDatagram()]), results.getRef()));
    assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    assertEquals(a.maxDatagram(), atB.receiveMessage(WAIT).data().size());
  }

  @Test
  void sendsBeyondTheSendSlotsWaitAndAllGo() {
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    TestProbe<DatagramEndpoint.Event> hb = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    DatagramEndpoint.Bound b = bind(hb);
    TestProbe<ReceivedDatagram> atB = subscribe(b);
    TestProbe<SendResult> results = kit.createTestProbe();
    // 4 send slots, 16 receives at B: 12 at once wait for slots, none is dropped by us
    for (int i = 0; i < 12; i++) {
      a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("d" + i), results.getRef()));
    }
    for (int i = 0; i < 12; i++) {
      assertInstanceOf(SendResult.Sent.class, results.receiveMessage(WAIT));
    }
    List<String> got = new ArrayList<>();
    for (int i = 0; i < 12; i++) got.add(atB.receiveMessage(WAIT).data().utf8String());
    for (int i = 0; i < 12; i++) assertTrue(got.contains("d" + i), got.toString());
    TestProbe<DatagramEndpoint.Status> status = kit.createTestProbe();
    a.endpoint().tell(new DatagramEndpoint.GetStatus(status.getRef()));
    DatagramEndpoint.Status s = status.receiveMessage(WAIT);
    assertEquals(1, s.peers());
    assertEquals(0, s.pendingSends());
    assertNotEquals(0, s.qpn());
  }

  @Test
  void aFailedQpFreesEverythingAndTheEndpointBindsAgainKeepingItsSubscribers() {
    FaultInjection faults = FaultInjection.of(provider).orElse(null);
    org.junit.jupiter.api.Assumptions.assumeTrue(faults != null,
        "[actors] skipped: it injects faults, which this provider cannot");
    TestProbe<DatagramEndpoint.Event> ha = kit.createTestProbe();
    TestProbe<DatagramEndpoint.Event> hb = kit.createTestProbe();
    DatagramEndpoint.Bound a = bind(ha);
    DatagramEndpoint.Bound b = bind(hb);
    TestProbe<ReceivedDatagram> atA = subscribe(a);
    TestProbe<dev.pekkordma.verbs.QueuePair> qp = kit.createTestProbe();
    a.endpoint().tell(new DatagramEndpoint.Inspect(qp.getRef()));
    faults.qpFatal(qp.receiveMessage(WAIT));
    TestProbe<SendResult> results = kit.createTestProbe();
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("lost"), results.getRef()));
    DatagramEndpoint.Restarting restarting =
        ha.expectMessageClass(DatagramEndpoint.Restarting.class, WAIT);
    assertTrue(restarting.reason().contains("send completed with"), restarting.reason());
    assertInstanceOf(SendResult.SendFailed.class, results.receiveMessage(WAIT));
    DatagramEndpoint.Bound again = ha.expectMessageClass(DatagramEndpoint.Bound.class, WAIT);
    assertEquals(a.address(), again.address(), "the same address, port included");
    assertNotEquals(a.qpn(), again.qpn(), "a new QP");
    // A resolves B again; its SIDR request tells B where A's new QP is, so B's answer by
    // address reaches A's subscriber, kept across the restart
    TestProbe<ReceivedDatagram> atB = subscribe(b);
    a.endpoint().tell(new DatagramEndpoint.Send(b.address(), text("back"), null));
    assertEquals("back", atB.receiveMessage(WAIT).data().utf8String());
    b.endpoint().tell(new DatagramEndpoint.Send(again.address(), text("after"), null));
    assertEquals("after", atA.receiveMessage(WAIT).data().utf8String());
  }

  /** A group of its own for each test: 239.78.x.y, x from this JVM's pid. */
  static InetSocketAddress newGroup() {
    int x = (int) (ProcessHandle.current().pid() % 250) + 1;
    int y = GROUPS.incrementAndGet() % 250 + 1;
    return new InetSocketAddress("239.78." + x + "." + y, 0);
  }
}
