package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.actors.ConnectionActor.Connected;
import dev.pekkordma.actors.ConnectionActor.ConnectionLost;
import dev.pekkordma.actors.ConnectionActor.Disconnected;
import dev.pekkordma.actors.DeviceActor.*;
import dev.pekkordma.actors.ListenerActor.Unbound;
import dev.pekkordma.testing.RxeLink;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.RdmaProvider;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A real device removal on the native provider: {@code rdma link delete} of the CM device under
 * a device actor with a PD and a QP and under an established connection, then
 * {@code rdma link add} again. rxe raises no DEVICE_FATAL (the kernel only disassociates devices
 * whose driver supports it): the CM's DEVICE_REMOVAL is the sign, and the kernel's removal waits
 * until every context of the device is closed, so {@code rdma link delete} finishing proves that
 * nothing of ours held on. Soft's DeviceActorTest and CmDeviceFailureTest do the same by fault
 * injection.
 */
class DeviceRemovalTest {
  private static final String NETDEV = System.getProperty("pekko-rdma.test.cm-netdev", "dummy0");

  @Test
  void aRemovedDeviceStopsItsSubtreeLetsTheKernelRemoveItAndIsReopenedWhenBack()
      throws Exception {
    Assumptions.assumeTrue(NATIVE, () -> skip("removes a real device: native only"));
    Assumptions.assumeTrue(Boolean.getBoolean("pekko-rdma.test.remove-device"),
        () -> skip("removes " + CM_DEVICE + " for a while; -Dpekko-rdma.test.remove-device=true"
            + " runs it (native/softroce/run-native-tests.sh does, last)"));
    ActorTestKit kit = ActorTestKit.create("DeviceRemoval", config(CM_DEVICE,
        "pekko-rdma.actors.cm { device-idle-timeout = 100ms, retry.max-attempts = 1 }"));
    try {
      RdmaExtension rdma = RdmaExtension.get(kit.system());
      RdmaProvider provider = rdma.provider();
      ActorRef<DeviceActor.Command> dev = rdma.device(CM_DEVICE);
      TestProbe<DeviceEvent> subscriber = kit.createTestProbe();
      dev.tell(new Subscribe(subscriber.getRef()));
      ActorRef<PdActor.Command> pd = allocatePd(kit, dev);
      TestProbe<QpActor.Event> owner = kit.createTestProbe();
      ActorRef<QpActor.Command> qp = createQp(kit, pd, QpSpec.rc(), owner.getRef());
      transition(kit, qp, QpAttributes.toInit(1, ACCESS));
      assertNotNull(pool(kit, pd).lease());

      TestProbe<ListenerActor.Event> server = kit.createTestProbe();
      TestProbe<ConnectionActor.Event> client = kit.createTestProbe();
      TestProbe<ConnectionActor.Event> serverSide = kit.createTestProbe();
      Connected[] both = connectThroughCm(rdma, CM_HOST, server, client, serverSide);

      Process delete = RxeLink.delete(CM_DEVICE);
      DeviceFailed failed = fish(subscriber, DeviceFailed.class);
      assertEquals(new DeviceFailed(CM_DEVICE, "DEVICE_REMOVAL"), failed);
      TestProbe<Object> watcher = kit.createTestProbe();
      watcher.expectTerminated(qp, WAIT);
      watcher.expectTerminated(pd, WAIT);
      // each side ends, lost with the device or, had the other side gone first, disconnected
      assertEquals(both[0].connection(), ended(client));
      assertEquals(both[1].connection(), ended(serverSide));
      assertEquals("DEVICE_REMOVAL", fish(server, Unbound.class).reason());
      // the kernel removed the device: every context of it, ours and librdmacm's, was closed
      assertTrue(delete.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS),
          "rdma link delete " + CM_DEVICE + " still waits for a context of it to close");
      assertEquals(0, delete.exitValue(), RxeLink.output(delete));
      ReopenFailed gone = fish(subscriber, ReopenFailed.class);
      assertTrue(gone.reason().contains(CM_DEVICE), gone.reason());
      awaitResources(provider, counts(0, 0, 0, 0, 0, 0));

      RxeLink.add(CM_DEVICE, NETDEV, WAIT);
      awaitCmGid(provider);
      DeviceEvent e;
      do {
        e = subscriber.receiveMessage(WAIT);
      } while (e instanceof ReopenFailed || e instanceof PortChanged);
      assertInstanceOf(DeviceReopened.class, e, "after rdma link add");
      // it serves again: a PD and a QP on the named device, and a connection through the CM
      ActorRef<PdActor.Command> again = allocatePd(kit, dev);
      createQp(kit, again, QpSpec.rc(), owner.getRef());
      connectThroughCm(rdma, CM_HOST, kit.createTestProbe(), kit.createTestProbe(),
          kit.createTestProbe());
    } finally {
      kit.shutdownTestKit();
      RxeLink.restore(CM_DEVICE, NETDEV, WAIT);
    }
  }

  private static ActorRef<ConnectionActor.Command> ended(TestProbe<ConnectionActor.Event> side) {
    ConnectionActor.Event e = side.fishForMessage(WAIT, m ->
        m instanceof ConnectionLost || m instanceof Disconnected
            ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore()).get(0);
    return e instanceof ConnectionLost l ? l.connection() : ((Disconnected) e).connection();
  }
}
