package dev.pekkordma.samples.echo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.actors.Buffer;
import dev.pekkordma.actors.CmActor;
import dev.pekkordma.actors.ConnectionActor;
import dev.pekkordma.actors.QpActor;
import dev.pekkordma.actors.QpSpec;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.actors.TestRdma;
import dev.pekkordma.conformance.PeerProcess;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import dev.pekkordma.verbs.WcStatus;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * An echo server in another process stops (SIGSTOP): a send to it ends in RETRY_EXC_ERR after
 * its QP's transport timeout, the connection ends (ConnectionLost) naming the peer and why, and
 * the client's side frees everything.
 */
class EchoPeerStoppedTest {
  static final ActorTestKit kit = ActorTestKit.create("EchoPeerStoppedTest",
      TestRdma.config(TestRdma.CM_DEVICE, "pekko-rdma.actors.cm.device-idle-timeout = 100ms"));

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void aStoppedServerEndsTheConnectionNamingItAndWhy() throws Exception {
    Assumptions.assumeFalse(TestRdma.NATIVE, "the error cause is the soft provider's");
    RdmaProvider provider = RdmaExtension.get(kit.system()).provider();
    ResourceCounts idle = new ResourceCounts(1, 0, 0, 0, 0, 0, 0, 0, 0); // the device stays open
    try (PeerProcess server = PeerProcess.start(EchoServerMain.class)) {
      int port = Integer.parseInt(server.awaitLine("BOUND ", PeerProcess.START));
      TestProbe<ConnectionActor.Event> events = kit.createTestProbe();
      RdmaExtension.get(kit.system()).cm().tell(new CmActor.Connect(
          new InetSocketAddress(TestRdma.CM_HOST, port), "echo please".getBytes(), QpSpec.rc(),
          events.getRef()));
      ConnectionActor.Connected c = events.expectMessageClass(ConnectionActor.Connected.class,
          Duration.ofSeconds(30));
      server.signal("STOP");
      try {
        TestProbe<QpActor.WorkResult> results = kit.createTestProbe();
        Buffer out = c.pool().lease();
        out.put(0, "are you there".getBytes());
        c.qp().tell(new QpActor.Post(List.of(new QpActor.Send(1, out, 13)), results.getRef()));
        long stopped = System.nanoTime();
        QpActor.Completed done = results.expectMessageClass(QpActor.Completed.class,
            Duration.ofSeconds(60));
        long took = (System.nanoTime() - stopped) / 1_000_000;
        assertTrue(took < 15_000, "8 tries of 0.54 s took " + took + " ms");
        assertEquals(WcStatus.RETRY_EXC_ERR, done.completions().get(0).status());
        ConnectionActor.ConnectionLost lost = events.expectMessageClass(
            ConnectionActor.ConnectionLost.class, Duration.ofSeconds(10));
        assertTrue(lost.reason().contains("no answer") && lost.reason().contains("127.0.0.1:"),
            lost.reason());
      } finally {
        server.signal("CONT");
      }
    }
    long deadline = System.nanoTime() + TestRdma.WAIT.toNanos();
    while (!provider.liveResources().equals(idle) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(idle, provider.liveResources());
  }
}
