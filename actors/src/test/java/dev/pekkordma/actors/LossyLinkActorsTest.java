package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.actors.ConnectionActor.*;
import dev.pekkordma.actors.ListenerActor.*;
import dev.pekkordma.actors.QpActor.*;
import dev.pekkordma.conformance.VethLink;
import dev.pekkordma.verbs.WcStatus;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * A connection of the actors across the Soft-RoCE VM's veth link (the listener on rxe_a at
 * {@code pekko-rdma.test.cm-address}, the client from rxe_b) while {@code
 * native/softroce/link.sh} (its path in {@code pekko-rdma.test.link-script}) kills the link: a
 * send finds the peer gone once its QP's retries are spent, the connection ends naming the peer
 * and why, and the client, supervised, connects again once the link is back.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.test.link-script", matches = ".+")
@Timeout(600)
class LossyLinkActorsTest {
  private static final Duration LONG = Duration.ofSeconds(120);
  static final ActorTestKit kit = ActorTestKit.create("LossyLinkActorsTest", config(CM_DEVICE,
      "pekko-rdma.actors.cm { connect-timeout = 30s, disconnect-timeout = 5s,"
          + " retry { min-backoff = 500ms, max-backoff = 2s, max-attempts = 5 } }"));
  static final RdmaExtension rdma = RdmaExtension.get(kit.system());

  @AfterAll
  static void shutdown() throws Exception {
    VethLink.set("clear");
    kit.shutdownTestKit();
  }

  @Test
  void aDeadLinkEndsTheConnectionNamingThePeerAndTheClientComesBack() throws Exception {
    VethLink.set("clear");
    TestProbe<ListenerActor.Event> server = kit.createTestProbe();
    TestProbe<ConnectionActor.Event> client = kit.createTestProbe();
    TestProbe<ConnectionActor.Event> serverSide = kit.createTestProbe();
    rdma.cm().tell(new CmActor.Listen(new InetSocketAddress(CM_HOST, 0), QpSpec.rc(),
        server.getRef()));
    Bound bound = server.expectMessageClass(Bound.class, WAIT);
    rdma.cm().tell(new CmActor.Connect(bound.address(), new byte[0], QpSpec.rc(),
        client.getRef()));
    server.expectMessageClass(ConnectionRequested.class, LONG).connection()
        .tell(new Accept(new byte[0], serverSide.getRef()));
    Connected c = client.expectMessageClass(Connected.class, LONG);
    serverSide.expectMessageClass(Connected.class, LONG);

    // what the attributes give: each try waits 4.096 us x 2^timeout, and there are retry + 1
    dev.pekkordma.verbs.QpAttributes attrs = QpActorTest.verbsQp(kit, c.qp()).query();
    long givenMs = (long) (4.096e-3 * (1L << attrs.timeout())) * (attrs.retryCount() + 1);
    log("the client's QP: timeout " + attrs.timeout() + ", retry_cnt " + attrs.retryCount()
        + ": " + givenMs + " ms of tries");
    VethLink.set("blackhole");
    long dead = System.nanoTime();
    ConnectionLost lost;
    try {
      TestProbe<WorkResult> work = kit.createTestProbe();
      Buffer out = c.pool().lease();
      out.put(0, "into the void".getBytes(StandardCharsets.UTF_8));
      c.qp().tell(Post.of(new Send(1, out, 13), work.getRef()));
      lost = client.expectMessageClass(ConnectionLost.class, LONG);
      long took = (System.nanoTime() - dead) / 1_000_000;
      log("the client's connection was lost " + took + " ms after the link died: "
          + lost.reason());
      // the kernel may start the timer late by up to one try; the emulated VM adds its own
      assertTrue(took < 2 * givenMs + 10_000, "lost after " + took + " ms; the attributes give "
          + givenMs + " ms");
    } finally {
      VethLink.set("clear");
    }
    assertEquals(c.connection(), lost.connection());
    assertTrue(lost.reason().contains(WcStatus.RETRY_EXC_ERR.name()), lost.reason());
    assertTrue(lost.reason().contains(bound.address().getAddress().getHostAddress()),
        lost.reason());

    // supervised: the client connects again, now that the link is back
    client.fishForMessage(LONG, m -> m instanceof Reconnecting ? FishingOutcomes.complete()
        : FishingOutcomes.continueAndIgnore());
    TestProbe<ConnectionActor.Event> serverSide2 = kit.createTestProbe();
    server.fishForMessage(LONG, m -> {
      if (m instanceof ConnectionRequested r) {
        r.connection().tell(new Accept(new byte[0], serverSide2.getRef()));
        return FishingOutcomes.complete();
      }
      return FishingOutcomes.continueAndIgnore();
    });
    Connected again = client.expectMessageClass(Connected.class, LONG);
    serverSide2.expectMessageClass(Connected.class, LONG);
    again.connection().tell(Disconnect.INSTANCE);
    client.expectMessageClass(Disconnected.class, LONG);
    bound.listener().tell(Unbind.INSTANCE);
    server.fishForMessage(LONG, m -> m instanceof Unbound ? FishingOutcomes.complete()
        : FishingOutcomes.continueAndIgnore());
    log("the client connected again once the link was back");
  }

  private static void log(String line) {
    System.out.println("[faults] actors: " + line);
    System.out.flush();
  }
}
