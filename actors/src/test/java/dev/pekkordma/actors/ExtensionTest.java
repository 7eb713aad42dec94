package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.RdmaProvider;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/** Settings checked at start, the extension's life, and pollers that cost nothing when idle. */
class ExtensionTest {
  private static Config with(String line) {
    return ConfigFactory.parseString(line).withFallback(config(""));
  }

  private static void rejects(String line, String key, String words) {
    ConfigException e = assertThrows(ConfigException.class,
        () -> RdmaActorsSettings.from(with(line).resolve()), line);
    assertTrue(e.getMessage().contains(key), e.getMessage());
    assertTrue(e.getMessage().contains(words), e.getMessage());
  }

  @Test
  void settingsThatMakeNoSenseFailNamingTheirKey() {
    rejects("pekko-rdma.actors.device.reopen-backoff.max-backoff = 1ms",
        "device.reopen-backoff.max-backoff", "at least min-backoff");
    rejects("pekko-rdma.actors.qp.restart-backoff.random-factor = 2",
        "qp.restart-backoff.random-factor", "[0, 1]");
    rejects("pekko-rdma.actors.buffer-pool.slab-size = 5000", "buffer-pool.slab-size",
        "multiple of buffer-size");
    rejects("pekko-rdma.actors.cm.connect-timeout = 1s", "pekko-rdma.actors.cm.connect-timeout",
        "longer than pekko-rdma.cm.connect-timeout");
    rejects("pekko-rdma.actors.cm.retry.max-attempts = 0", "cm.retry.max-attempts", "at least 1");
    rejects("pekko-rdma.actors.devices = [a, a]", "pekko-rdma.actors.devices", "repeat");
    rejects("pekko-rdma.actors.datagram.receive-buffers = 0",
        "pekko-rdma.actors.datagram.receive-buffers", "at least 1");
    rejects("pekko-rdma.actors.datagram.restart-backoff.random-factor = 2",
        "pekko-rdma.actors.datagram.restart-backoff.random-factor", "[0, 1]");
    assertNotNull(RdmaActorsSettings.from(config("").resolve()));
    // the datagram block starts from pekko-rdma.datagram-defaults: a value set here wins
    RdmaActorsSettings s = RdmaActorsSettings.from(
        with("pekko-rdma.actors.datagram.max-peers = 7").resolve());
    assertEquals(7, s.datagram.maxPeers());
    assertEquals(64, s.datagram.receiveBuffers());
    assertEquals("pekko-rdma.actors.datagram.resolve-timeout",
        s.datagram.setting("resolve-timeout"));
  }

  @Test
  void anUnknownDeviceFailsTheExtensionNamingTheKey() {
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "UnknownDevice",
        with("pekko-rdma.actors.devices = [nope]"));
    try {
      ConfigException e = assertThrows(ConfigException.class, () -> RdmaExtension.get(system));
      assertTrue(e.getMessage().contains("pekko-rdma.actors.devices"), e.getMessage());
      assertTrue(e.getMessage().contains("nope"), e.getMessage());
    } finally {
      system.terminate();
    }
  }

  @Test
  void terminatingTheSystemFreesEverything() throws Exception {
    List<String> two = NATIVE ? List.of(DEVICE, CM_DEVICE) : List.of("a", "b");
    ActorTestKit kit = ActorTestKit.create("Terminates", with("pekko-rdma.soft.devices = [a, b]\n"
        + "pekko-rdma.actors.devices = [\"" + String.join("\", \"", two) + "\"]"));
    RdmaProvider provider;
    try {
      RdmaExtension rdma = RdmaExtension.get(kit.system());
      provider = rdma.provider();
      assertEquals(two, rdma.deviceNames());
      for (String name : rdma.deviceNames()) {
        ActorRef<PdActor.Command> pd = allocatePd(kit, rdma.device(name));
        TestProbe<QpActor.Event> owner = kit.createTestProbe();
        ActorRef<QpActor.Command> qp = createQp(kit, pd, QpSpec.rc(), owner.getRef());
        transition(kit, qp, QpAttributes.toInit(1, ACCESS));
        TestProbe<org.apache.pekko.pattern.StatusReply<PdActor.Registration>> reg =
            kit.createTestProbe();
        pd.tell(new PdActor.Register(8192, ACCESS, reg.getRef()));
        ok(reg);
      }
      assertEquals(counts(2, 2, 4, 2, 2, 0), provider.liveResources());
    } finally {
      kit.shutdownTestKit();
    }
    assertEquals(counts(0, 0, 0, 0, 0, 0), provider.liveResources());
  }

  @Test
  void idlePollersUseNoCpu() throws Exception {
    String device = NATIVE ? DEVICE : "idle";
    // the default block timeout (the tests' 20 ms wakes each poller 25 times in the 500 ms:
    // 108 ms of CPU under the Soft-RoCE VM's emulation)
    ActorTestKit kit = ActorTestKit.create("Idle", with("pekko-rdma.soft.devices = [idle]\n"
        + "pekko-rdma.actors.devices = [\"" + device + "\"]\n"
        + "pekko-rdma.runtime.poller.block-timeout = 100ms"));
    try {
      RdmaExtension rdma = RdmaExtension.get(kit.system());
      ActorRef<PdActor.Command> pd = allocatePd(kit, rdma.device(device));
      TestProbe<QpActor.Event> owner = kit.createTestProbe();
      createQp(kit, pd, QpSpec.rc(), owner.getRef());
      Thread.sleep(200); // past the spin and yield budget
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      long before = pollerCpu(mx);
      Thread.sleep(500);
      long used = pollerCpu(mx) - before;
      assertTrue(used < Duration.ofMillis(50).toNanos(),
          "idle pollers used " + used / 1_000_000 + " ms of CPU in 500 ms");
    } finally {
      kit.shutdownTestKit();
    }
  }

  /** CPU time of the pollers' threads. */
  private static long pollerCpu(ThreadMXBean mx) {
    long total = 0;
    int threads = 0;
    for (ThreadInfo t : mx.dumpAllThreads(false, false)) {
      if (t.getThreadName().startsWith("Idle-pekko-rdma-")) {
        total += mx.getThreadCpuTime(t.getThreadId());
        threads++;
      }
    }
    assertEquals(3, threads, "a completion poller, an async event reader, a CM event reader");
    return total;
  }
}
