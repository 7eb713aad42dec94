package dev.pekkordma.samples.echo;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.actors.TestRdma;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class EchoSampleTest {
  static final Duration WAIT = TestRdma.WAIT.multipliedBy(2);
  /** Emulated (the VM), each round trip through the actors takes milliseconds. */
  static final int SCALE = TestRdma.NATIVE ? 10 : 1;
  static final ActorTestKit kit = ActorTestKit.create("EchoSampleTest",
      TestRdma.config(TestRdma.CM_DEVICE, "pekko-rdma.actors.cm.device-idle-timeout = 100ms\n"
          + "pekko-rdma.actors.cm.retry.max-attempts = 2\n"
          + "pekko-rdma.actors.buffer-pool { buffer-size = 16KiB, slab-size = 1MiB }"));

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void twoClientsAtOnceGetEveryMessageBackAndNothingIsLeftAfterwards() {
    RdmaProvider provider = RdmaExtension.get(kit.system()).provider();
    TestProbe<InetSocketAddress> bound = kit.createTestProbe();
    ActorRef<?> server = kit.spawn(
        EchoServer.create(new InetSocketAddress(TestRdma.CM_HOST, 0), bound.getRef()));
    InetSocketAddress address = bound.receiveMessage(WAIT);
    TestProbe<EchoClient.EchoResult> results = kit.createTestProbe();
    kit.spawn(EchoClient.create(address, 300 / SCALE, results.getRef()));
    kit.spawn(EchoClient.create(address, 200 / SCALE, results.getRef()));
    int total = 0;
    for (int i = 0; i < 2; i++) {
      EchoClient.EchoResult r = results.receiveMessage(WAIT);
      assertNull(r.failure(), r.failure());
      total += r.echoed();
    }
    assertEquals(500 / SCALE, total);
    kit.stop(server);
    // the listener stops with its handler; the sessions ended with their clients
    long deadline = System.nanoTime() + WAIT.toNanos();
    ResourceCounts idle = new ResourceCounts(1, 0, 0, 0, 0, 0, 0, 0, 0);
    while (!provider.liveResources().equals(idle) && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertEquals(idle, provider.liveResources());
  }

  @Test
  void aClientOfNoServerReportsWhy() throws Exception {
    int port;
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    TestProbe<EchoClient.EchoResult> results = kit.createTestProbe();
    kit.spawn(EchoClient.create(new InetSocketAddress(TestRdma.CM_HOST, port), 1, results.getRef()));
    // WAIT: on native in the VM the first connect of a JVM also loads the native libraries
    EchoClient.EchoResult r = results.receiveMessage(WAIT);
    assertNotNull(r.failure());
    assertTrue(r.failure().contains("ConnectFailed"), r.failure());
  }
}
