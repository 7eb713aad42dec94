package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;
import static dev.pekkordma.cluster.TestCluster.result;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cluster.TestCluster.Node;
import dev.pekkordma.conformance.VethLink;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Two members on the native provider whose RDMA connection crosses the Soft-RoCE VM's veth link
 * (a listens on rxe_a at 198.51.100.1, b on rxe_b at 198.51.100.2; Pekko's own remoting stays on
 * loopback, so the cluster keeps both members up while the RDMA link suffers). {@code
 * native/softroce/link.sh}, whose path is in {@code pekko-rdma.test.link-script}, puts the
 * faults on the link. RC retransmits what a lossy link drops, so a channel delivers every
 * message in order; a link that stays dead disconnects the member that sends on it, naming the
 * peer and why, and once the link is back the members connect again.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.test.link-script", matches = ".+")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(600)
class LossyLinkClusterTest {
  static Node a;
  static Node b;

  /** The native provider at {@code host}, with the patience the emulated VM needs. */
  private static String nativeAt(String host) {
    return "pekko-rdma.provider = native\n"
        + "pekko-rdma.actors.devices = [\"rxe_a\", \"rxe_b\"]\n"
        + "pekko-rdma.cluster { bind-host = \"" + host + "\", connect-wait = 120s,"
        + " describe-timeout = 10s, describe-attempts = 3, pending-request-timeout = 20s }\n"
        + "pekko-rdma.cm.connect-timeout = 10s\n"
        + "pekko-rdma.actors.cm { connect-timeout = 20s, accept-timeout = 30s,"
        + " disconnect-timeout = 5s }\n"
        // emulation delays heartbeats by seconds: no member is to be downed for that
        + "pekko.cluster.failure-detector.acceptable-heartbeat-pause = 20s\n"
        + "pekko.cluster.split-brain-resolver.stable-after = 30s\n"
        // leaving the cluster and closing the RDMA link took more than the default 10 s there
        + "pekko.actor.testkit.typed.system-shutdown-default = 60s\n";
  }

  @BeforeAll
  static void start() throws Exception {
    VethLink.set("clear");
    a = new Node(TestCluster.config(nativeAt("198.51.100.1")));
    b = new Node(TestCluster.config(nativeAt("198.51.100.2")));
    a.join(a);
    b.join(a);
    a.await(PeerEvent.Connected.class, b.address());
    b.await(PeerEvent.Connected.class, a.address());
  }

  @AfterAll
  static void stop() throws Exception {
    VethLink.set("clear");
    if (b != null) b.shutdown();
    if (a != null) a.shutdown();
  }

  @Test
  @Order(1)
  void aChannelDeliversEveryMessageInOrderAcrossALossyLink() throws Exception {
    Channel<String> from = a.rdma.channel("lossy", Codec.utf8());
    TestProbe<Received<String>> inbox = b.kit.createTestProbe();
    b.rdma.channel("lossy", Codec.utf8()).subscribe(inbox.getRef());
    List<String> sent = IntStream.range(0, 300).mapToObj(i -> "m" + i + "-" + "x".repeat(i * 7))
        .collect(Collectors.toList());
    VethLink.set("netem", "loss", "2%", "delay", "1ms", "reorder", "10%");
    try {
      long t0 = System.nanoTime();
      result(Source.from(sent).runWith(from.sink(b.address()), a.system()));
      List<String> got = inbox.receiveSeveralMessages(sent.size(), WAIT).stream()
          .map(Received::message).collect(Collectors.toList());
      assertEquals(sent, got);
      log(String.format("300 messages across 2%% loss with reordering: in order, in %.1f s",
          (System.nanoTime() - t0) / 1e9));
    } finally {
      VethLink.set("clear");
    }
  }

  @Test
  @Order(2)
  void aDeadLinkDisconnectsTheSenderNamingTheMemberAndItConnectsAgainOnceTheLinkIsBack()
      throws Exception {
    // the member with the lower address connects: it finds the dead link by sending on it and
    // connects again; the other side's old connection is then replaced
    boolean aConnects = Member.addressOrdering().compare(a.address(), b.address()) < 0;
    Node sender = aConnects ? a : b;
    Node receiver = aConnects ? b : a;
    Channel<String> from = sender.rdma.channel("dead", Codec.utf8());
    TestProbe<Received<String>> inbox = receiver.kit.createTestProbe();
    receiver.rdma.channel("dead", Codec.utf8()).subscribe(inbox.getRef());
    result(from.send(receiver.address(), "before"));
    assertEquals("before", inbox.receiveMessage(WAIT).message());
    VethLink.set("blackhole");
    long dead = System.nanoTime();
    PeerEvent.Disconnected gone;
    List<CompletionStage<?>> lost = new ArrayList<>();
    try {
      // only traffic finds out that the link is dead: the sends' retries run out
      for (int i = 0; i < 4; i++) lost.add(from.send(receiver.address(), "into the void " + i));
      gone = sender.await(PeerEvent.Disconnected.class, receiver.address());
      log("the sender saw the receiver disconnected " + (System.nanoTime() - dead) / 1_000_000
          + " ms after the link died: " + gone.reason());
    } finally {
      VethLink.set("clear");
    }
    assertTrue(gone.reason().contains("RETRY_EXC_ERR"), gone.reason());
    assertTrue(gone.reason().contains(VethLink.SERVER) || gone.reason().contains(VethLink.CLIENT),
        gone.reason());
    for (CompletionStage<?> s : lost) {
      // failed, saying why, or delivered: never dropped in silence
      try {
        s.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.ExecutionException e) {
        log("a send during the dead link failed: " + e.getCause());
      }
    }
    sender.await(PeerEvent.Connected.class, receiver.address());
    result(from.send(receiver.address(), "after"));
    Received<String> next = inbox.receiveMessage(WAIT);
    while (!next.message().equals("after")) next = inbox.receiveMessage(WAIT);
    log("connected again once the link was back");
  }

  private static void log(String line) {
    System.out.println("[faults] cluster: " + line);
    System.out.flush();
  }

}
