package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.actors.ConnectionActor.*;
import dev.pekkordma.actors.ListenerActor.*;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.spi.FaultInjection;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** A device that dies under established connections (a system of its own: it stays dead). */
class CmDeviceFailureTest {
  static final ActorTestKit kit = ActorTestKit.create("CmDeviceFailureTest", config(
      "pekko-rdma.soft.devices = [\"soft0\"]\n"
          + "pekko-rdma.cm.connect-timeout = 400ms\n"
          + "pekko-rdma.actors.cm { connect-timeout = 2s, device-idle-timeout = 100ms,"
          + " retry { min-backoff = 50ms, max-backoff = 100ms, max-attempts = 2 } }"));
  static final RdmaExtension rdma = RdmaExtension.get(kit.system());
  static final RdmaProvider provider = rdma.provider();

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void deviceRemovalEndsConnectionsAndTheListenerAndFreesEverything() {
    FaultInjection faults = faults(provider);
    TestProbe<ListenerActor.Event> server = kit.createTestProbe();
    TestProbe<ConnectionActor.Event> client = kit.createTestProbe();
    TestProbe<ConnectionActor.Event> serverSide = kit.createTestProbe();
    Connected[] both = connectThroughCm(rdma, "127.0.0.1", server, client, serverSide);
    Connected c = both[0];
    Connected s = both[1];

    try (DeviceContext other = provider.open("soft0")) {
      faults.deviceFatal(other);
    }
    assertEquals(c.connection(), client.expectMessageClass(ConnectionLost.class, WAIT).connection());
    assertEquals(s.connection(),
        serverSide.expectMessageClass(ConnectionLost.class, WAIT).connection());
    Unbound unbound = fish(server, Unbound.class);
    assertEquals("DEVICE_REMOVAL", unbound.reason());
    // the client tries again, but the device stays dead
    assertEquals(1, client.expectMessageClass(Reconnecting.class, WAIT).attempt());
    ConnectFailed failed = fish(client, ConnectFailed.class);
    // the retry's address resolution finds no device (as the kernel's CM does), or its id
    // hears of the removal first
    assertTrue(failed.reason().contains("ENODEV") || failed.reason().contains("DEVICE_REMOVAL"),
        failed.reason());
    TestProbe<Object> watcher = kit.createTestProbe();
    watcher.expectTerminated(c.qp(), WAIT);
    watcher.expectTerminated(s.qp(), WAIT);
    // no QP, CQ, id, PD or context is left (the configured device keeps failing to reopen)
    awaitResources(provider, counts(0, 0, 0, 0, 0, 0));
  }
}
