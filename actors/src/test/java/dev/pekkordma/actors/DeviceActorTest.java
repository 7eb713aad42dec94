package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.actors.DeviceActor.*;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.spi.FaultInjection;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Port and device events, a device's failure and reopening; each test has a device of its own. */
class DeviceActorTest {
  static final ActorTestKit kit = ActorTestKit.create("DeviceActorTest",
      config(CM_DEVICE, "pekko-rdma.soft.devices = [\"ports\", \"fails\"]"));
  static final RdmaExtension rdma = RdmaExtension.get(kit.system());
  static final RdmaProvider provider = rdma.provider();
  /** On native one device serves both tests: the CM's, whose netdev the test may take down. */
  static final String PORTS = NATIVE ? CM_DEVICE : "ports";
  static final String FAILS = NATIVE ? CM_DEVICE : "fails";

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void portEventsReachTheDeviceAndItsSubscribers() {
    ActorRef<DeviceActor.Command> dev = rdma.device(PORTS);
    TestProbe<DeviceEvent> subscriber = kit.createTestProbe();
    TestProbe<DeviceEvent> unsubscribed = kit.createTestProbe();
    dev.tell(new Subscribe(subscriber.getRef()));
    dev.tell(new Subscribe(unsubscribed.getRef()));
    dev.tell(new Unsubscribe(unsubscribed.getRef()));
    assertEquals(PortState.ACTIVE, info(kit, dev).port().state());
    try {
      setPort(provider, PORTS, false);
      assertEquals(new PortChanged(PORTS, 1, AsyncEventType.PORT_ERR),
          subscriber.receiveMessage(WAIT));
      assertEquals(PortState.DOWN, info(kit, dev).port().state());
    } finally {
      setPort(provider, PORTS, true);
    }
    assertEquals(new PortChanged(PORTS, 1, AsyncEventType.PORT_ACTIVE),
        subscriber.receiveMessage(WAIT));
    assertEquals(PortState.ACTIVE, info(kit, dev).port().state());
    unsubscribed.expectNoMessage(java.time.Duration.ofMillis(50));
  }

  /** A system of its own: no other device muddles the counts. */
  @Test
  void deviceFatalStopsTheSubtreeFreesItAndReopensWithBackoff() {
    faults(provider);
    ActorTestKit own =
        ActorTestKit.create("DeviceFatal", config("pekko-rdma.soft.devices = [dies]"));
    try {
      RdmaExtension rdma = RdmaExtension.get(own.system());
      RdmaProvider provider = rdma.provider();
      ActorRef<DeviceActor.Command> dev = rdma.device("dies");
      TestProbe<DeviceEvent> subscriber = own.createTestProbe();
      dev.tell(new Subscribe(subscriber.getRef()));
      ActorRef<PdActor.Command> pd = allocatePd(own, dev);
      TestProbe<QpActor.Event> owner = own.createTestProbe();
      ActorRef<QpActor.Command> qp = createQp(own, pd, QpSpec.rc(), owner.getRef());
      transition(own, qp, QpAttributes.toInit(1, ACCESS));
      assertNotNull(pool(own, pd).lease());
      assertEquals(counts(1, 1, 1, 1, 1, 0), provider.liveResources());

      try (DeviceContext other = provider.open("dies")) {
        FaultInjection.of(provider).orElseThrow().deviceFatal(other);
        assertEquals(new DeviceFailed("dies", "DEVICE_FATAL"),
            subscriber.expectMessageClass(DeviceFailed.class, WAIT));
        TestProbe<Object> watcher = own.createTestProbe();
        watcher.expectTerminated(qp, WAIT);
        watcher.expectTerminated(pd, WAIT);
        // the soft device stays dead, so every reopening fails, further and further apart
        ReopenFailed first = subscriber.expectMessageClass(ReopenFailed.class, WAIT);
        ReopenFailed second = subscriber.expectMessageClass(ReopenFailed.class, WAIT);
        assertEquals(1, first.attempt());
        assertEquals(2, second.attempt());
        assertTrue(first.reason().contains("fatal"), first.reason());
        assertTrue(second.retryIn().compareTo(first.retryIn().dividedBy(2)) > 0);
        TestProbe<StatusReply<ActorRef<PdActor.Command>>> p = own.createTestProbe();
        dev.tell(new AllocatePd(p.getRef()));
        assertTrue(p.receiveMessage(WAIT).getError().getMessage().contains("is down"));
      }
      // the device actor's context, PD, pool slab, CQ and QP are gone, and so is ours
      awaitResources(provider, counts(0, 0, 0, 0, 0, 0));

      // the device comes back: the next attempt reopens it and it serves again
      try (DeviceContext probe = provider.open("dies")) {
        FaultInjection.of(provider).orElseThrow().restoreDevice(probe);
      }
      DeviceEvent e;
      do {
        e = subscriber.receiveMessage(java.time.Duration.ofSeconds(15));
      } while (e instanceof ReopenFailed || e instanceof PortChanged);
      assertTrue(e instanceof DeviceReopened, "after the restore: " + e);
      ActorRef<PdActor.Command> again = allocatePd(own, dev);
      createQp(own, again, QpSpec.rc(), owner.getRef());
      again.tell(PdActor.Close.INSTANCE);
      own.createTestProbe().expectTerminated(again, WAIT);
      awaitResources(provider, counts(1, 0, 0, 0, 0, 0)); // the reopened device's context
    } finally {
      own.shutdownTestKit();
    }
  }

  @Test
  void aFailedDeviceIsOpenedAgainAndServesAgain() {
    ActorRef<DeviceActor.Command> dev = rdma.device(FAILS);
    TestProbe<DeviceEvent> subscriber = kit.createTestProbe();
    dev.tell(new Subscribe(subscriber.getRef()));
    ActorRef<PdActor.Command> pd = allocatePd(kit, dev);
    TestProbe<QpActor.Event> owner = kit.createTestProbe();
    ActorRef<QpActor.Command> qp = createQp(kit, pd, QpSpec.rc(), owner.getRef());
    var before = provider.liveResources();
    dev.tell(new Fail("a test says so"));
    assertEquals(new DeviceFailed(FAILS, "a test says so"), subscriber.receiveMessage(WAIT));
    TestProbe<Object> watcher = kit.createTestProbe();
    watcher.expectTerminated(qp, WAIT);
    watcher.expectTerminated(pd, WAIT);
    assertEquals(new DeviceReopened(FAILS, 1), subscriber.receiveMessage(WAIT));
    // the old context went and a new one came; the PD, its pool and the QP did not come back
    awaitResources(provider, before.minus(counts(0, 1, 1, 1, 1, 0)));
    ActorRef<PdActor.Command> again = allocatePd(kit, dev);
    createQp(kit, again, QpSpec.rc(), owner.getRef());
    again.tell(PdActor.Close.INSTANCE);
    watcher.expectTerminated(again, WAIT);
    awaitResources(provider, before.minus(counts(0, 1, 1, 1, 1, 0)));
    dev.tell(new Unsubscribe(subscriber.getRef()));
  }
}
