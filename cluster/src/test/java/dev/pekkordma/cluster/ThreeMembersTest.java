package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;
import static dev.pekkordma.cluster.TestCluster.result;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cluster.TestCluster.Node;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.remote.transport.ThrottlerTransportAdapter;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Three members in one JVM on the software provider: two that stay (a, b) and a third that each
 * test starts and ends its own way.
 */
class ThreeMembersTest {
  static Node a;
  static Node b;
  /** a's and b's resources with their one link: what every test leaves behind. */
  static List<ResourceCounts> pair;

  @BeforeAll
  static void start() {
    a = new Node(TestCluster.config(""));
    b = new Node(TestCluster.config(""));
    a.join(a);
    b.join(a);
    a.await(PeerEvent.Connected.class, b.address());
    b.await(PeerEvent.Connected.class, a.address());
    pair = List.of(a.resources(), b.resources());
  }

  /**
   * Each test waits until a and b hold what they held with each other alone: a connection of a
   * test's own (a stream, a third member) is released after the test's last step, and one still
   * going would be counted in the next test's figures.
   */
  @AfterEach
  void everyResourceReturns() {
    a.awaitResources(pair.get(0));
    b.awaitResources(pair.get(1));
  }

  @AfterAll
  static void stop() {
    if (b != null) b.shutdown();
    if (a != null) a.shutdown();
  }

  private static Node third() {
    return third(0);
  }

  /** A third member on Pekko port {@code port} (0: the OS picks), connected to a and b. */
  private static Node third(int port) {
    Node c = new Node(TestCluster.config("pekko.remote.artery.canonical.port = " + port + "\n"
        // so that a kill is a crash: no leaving, no goodbye to the others
        + "pekko.coordinated-shutdown.run-by-actor-system-terminate = off"));
    c.join(a);
    for (Node n : List.of(a, b)) {
      n.await(PeerEvent.Connected.class, c.address());
      c.await(PeerEvent.Connected.class, n.address());
    }
    return c;
  }

  @Test
  void aJoiningMemberIsConnectedAndCarriesTypedMessages() {
    Node c = third();
    try {
      List<TestProbe<Received<String>>> inboxes = new ArrayList<>();
      List<Channel<String>> channels = new ArrayList<>();
      for (Node n : List.of(a, b, c)) {
        Channel<String> ch = n.rdma.channel("greetings", Codec.utf8());
        TestProbe<Received<String>> inbox = n.kit.createTestProbe();
        ch.subscribe(inbox.getRef());
        inboxes.add(inbox);
        channels.add(ch);
      }
      List<Node> nodes = List.of(a, b, c);
      for (int from = 0; from < 3; from++) {
        for (int to = 0; to < 3; to++) {
          if (from == to) continue;
          result(channels.get(from).send(nodes.get(to).address(), "hello " + from + "->" + to));
          Received<String> r = inboxes.get(to).receiveMessage(WAIT);
          assertEquals(new Received<>(nodes.get(from).address(), "hello " + from + "->" + to), r);
        }
      }

      // a per-peer sink: every element arrives, in order
      List<String> sent = IntStream.range(0, 500).mapToObj(i -> "m" + i)
          .collect(Collectors.toList());
      result(Source.from(sent).runWith(channels.get(0).sink(c.address()), a.system()));
      List<String> got = inboxes.get(2).receiveSeveralMessages(500, WAIT).stream()
          .map(Received::message).collect(Collectors.toList());
      assertEquals(sent, got);

      // a per-peer flow emits what was delivered
      List<String> delivered = result(Source.from(sent.subList(0, 50))
          .via(channels.get(2).flow(b.address())).runWith(
              Sink.seq(), c.system()));
      assertEquals(sent.subList(0, 50), delivered);
      assertEquals(50, inboxes.get(1).receiveSeveralMessages(50, WAIT).size());

      // streams of their own: a sink to c, whose subscribers get every element in order
      Channel<String> streamed = a.rdma.channel("streamed", Codec.utf8());
      TestProbe<Received<String>> streamInbox = c.kit.createTestProbe();
      c.rdma.channel("streamed", Codec.utf8()).subscribe(streamInbox.getRef());
      result(Source.from(sent).runWith(streamed.streamSink(c.address()), a.system()));
      assertEquals(sent, streamInbox.receiveSeveralMessages(500, WAIT).stream()
          .map(Received::message).collect(Collectors.toList()));
      // and a flow to b, whose handler answers each element, knowing who sent it
      b.rdma.channel("streamed", Codec.utf8()).handleStreams(from -> Flow.<String>create()
          .map(m -> m.toUpperCase() + " from " + from.getPort().get()));
      int aPort = a.address().getPort().get();
      assertEquals(List.of("X from " + aPort, "Y from " + aPort), result(Source.from(
          List.of("x", "y")).via(streamed.streamFlow(b.address())).runWith(Sink.seq(),
          a.system())));

      // too large for a frame: refused at once, saying why
      String big = "x".repeat(a.rdma.maxMessageSize() + 1);
      var failure = assertThrows(AssertionError.class,
          () -> result(channels.get(0).send(b.address(), big)));
      assertTrue(failure.getCause().getMessage().contains("is larger than"),
          failure.getCause().getMessage());
    } finally {
      leave(c);
    }
  }

  @Test
  void aLeavingMemberIsClosedAndEveryResourceReturns() {
    Node c = third();
    assertNotEquals(pair.get(0), a.resources(), "a's connection with c holds resources");
    Channel<String> ch = c.rdma.channel("leaving", Codec.utf8());
    var leaving = org.apache.pekko.cluster.typed.Cluster.get(c.system());
    leaving.manager().tell(org.apache.pekko.cluster.typed.Leave.create(c.address()));
    a.await(PeerEvent.Removed.class, c.address());
    b.await(PeerEvent.Removed.class, c.address());
    a.awaitResources(pair.get(0));
    b.awaitResources(pair.get(1));
    // a member that left has stopped its system (coordinated shutdown): a send fails, not hangs
    result(c.system().getWhenTerminated());
    var late = assertThrows(AssertionError.class, () -> result(ch.send(a.address(), "late")));
    assertInstanceOf(SendFailedException.class, late.getCause().getCause(), late.toString());
  }

  @Test
  void aKilledMemberIsRemovedAndItsInFlightMessagesFail() {
    Node c = third();
    TestProbe<Received<String>> inbox = c.kit.createTestProbe();
    c.rdma.channel("stream", Codec.utf8()).subscribe(inbox.getRef());
    Channel<String> ch = a.rdma.channel("stream", Codec.utf8());
    AtomicInteger launched = new AtomicInteger();
    var run = Source.repeat("payload").throttle(2000, Duration.ofSeconds(1))
        .viaMat(KillSwitches.single(), Keep.right())
        .mapAsyncUnordered(64, m -> {
          launched.incrementAndGet();
          return ch.send(c.address(), m).handle((d, t) -> {
            if (t != null && !(t instanceof SendFailedException)) throw new AssertionError(t);
            return t == null ? new int[] {1, 0} : new int[] {0, 1};
          });
        })
        .toMat(Sink.fold(new int[] {0, 0}, (x, y) -> new int[] {x[0] + y[0], x[1] + y[1]}),
            Keep.both())
        .run(a.system());
    inbox.receiveSeveralMessages(200, WAIT); // flowing
    var stream = Source.repeat("streamed").throttle(500, Duration.ofSeconds(1))
        .runWith(a.rdma.channel("stream", Codec.utf8()).streamSink(c.address()), a.system());
    inbox.fishForMessage(WAIT, m -> m.message().equals("streamed")
        ? org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes.complete()
        : org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes.continueAndIgnore());

    kill(c);
    a.await(PeerEvent.Removed.class, c.address());
    b.await(PeerEvent.Removed.class, c.address());
    run.first().shutdown();
    int[] outcome = result(run.second());
    // every message is accounted for: delivered, or failed with a reason; none hangs
    assertEquals(launched.get(), outcome[0] + outcome[1], "ok + failed = sent");
    assertTrue(outcome[0] >= 200, "delivered before the kill: " + outcome[0]);
    assertTrue(outcome[1] >= 1, "failed after the kill: " + outcome[1]);
    // the stream to it fails too, once it is gone: it does not hang
    var streamFailure = assertThrows(AssertionError.class, () -> result(stream));
    assertNotNull(streamFailure.getCause(), streamFailure.toString());
  }

  @Test
  void aRestartedMemberIsConnectedAgain() {
    Node c = third();
    int port = c.address().getPort().get();
    var old = c.address();
    kill(c);
    Node again = third(port); // the same address, a new incarnation
    try {
      assertEquals(old, again.address());
      a.await(PeerEvent.Removed.class, old);
      Channel<String> ch = again.rdma.channel("again", Codec.utf8());
      TestProbe<Received<String>> inbox = a.kit.createTestProbe();
      a.rdma.channel("again", Codec.utf8()).subscribe(inbox.getRef());
      result(ch.send(a.address(), "back"));
      assertEquals("back", inbox.receiveMessage(WAIT).message());
    } finally {
      leave(again);
    }
  }

  @Test
  void anUnreachableMemberIsPausedUntilReachable() {
    Channel<String> ch = a.rdma.channel("paused", Codec.utf8());
    TestProbe<Received<String>> inbox = b.kit.createTestProbe();
    b.rdma.channel("paused", Codec.utf8()).subscribe(inbox.getRef());
    result(ch.send(b.address(), "before"));
    inbox.receiveMessage(WAIT);

    blackhole(a, b, true);
    java.util.concurrent.CompletableFuture<org.apache.pekko.Done> waiting = null;
    java.util.concurrent.CompletableFuture<org.apache.pekko.Done> sink = null;
    java.util.concurrent.CompletableFuture<org.apache.pekko.Done> ownStream = null;
    try {
      a.await(PeerEvent.Paused.class, b.address());
      waiting = ch.send(b.address(), "while unreachable").toCompletableFuture();
      var streamed = Source.range(1, 100).map(i -> "s" + i)
          .runWith(ch.sink(b.address()), a.system()).toCompletableFuture();
      ownStream = Source.range(1, 10).map(i -> "own" + i)
          .runWith(ch.streamSink(b.address()), a.system()).toCompletableFuture();
      inbox.expectNoMessage(Duration.ofMillis(300)); // the RDMA path is fine: we hold it back
      assertFalse(waiting.isDone(), "a message to an unreachable member waits");
      assertFalse(streamed.isDone(), "a stream to an unreachable member is backpressured");
      assertFalse(ownStream.isDone(), "so is a stream connection of its own");
      sink = streamed;
    } finally {
      blackhole(a, b, false);
    }
    a.await(PeerEvent.Resumed.class, b.address());
    result(waiting);
    result(sink);
    result(ownStream);
    // the connection's messages in order, and the stream's in order (the two interleave)
    List<String> got = inbox.receiveSeveralMessages(111, WAIT).stream().map(Received::message)
        .collect(Collectors.toList());
    List<String> overConnection = new ArrayList<>(List.of("while unreachable"));
    IntStream.rangeClosed(1, 100).forEach(i -> overConnection.add("s" + i));
    assertEquals(overConnection, got.stream().filter(m -> !m.startsWith("own"))
        .collect(Collectors.toList()));
    assertEquals(IntStream.rangeClosed(1, 10).mapToObj(i -> "own" + i)
        .collect(Collectors.toList()), got.stream().filter(m -> m.startsWith("own"))
        .collect(Collectors.toList()));
  }

  /** Drops (or lets through again) all Pekko traffic between x and y, as a partition would. */
  private static void blackhole(Node x, Node y, boolean on) {
    var provider = (org.apache.pekko.remote.RemoteActorRefProvider)
        ((org.apache.pekko.actor.ExtendedActorSystem)
            org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(x.system())).provider();
    var mode = on ? ThrottlerTransportAdapter.Blackhole$.MODULE$
        : ThrottlerTransportAdapter.Unthrottled$.MODULE$;
    try {
      // Scala's nested object, which javac cannot name
      var both = (ThrottlerTransportAdapter.Direction) Class.forName(
          "org.apache.pekko.remote.transport.ThrottlerTransportAdapter$Direction$Both$")
          .getField("MODULE$").get(null);
      var done = provider.transport().managementCommand(
          new ThrottlerTransportAdapter.SetThrottle(y.address(), both, mode));
      scala.concurrent.Await.result(done, scala.concurrent.duration.Duration.create(5, "s"));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /**
   * A crash, as far as one JVM allows: the member's RDMA provider closes at once (every CM id
   * and device gone, as at process exit), then its actor system stops without leaving.
   */
  private static void kill(Node c) {
    dev.pekkordma.actors.RdmaExtension.get(c.system()).provider().close();
    c.system().terminate();
    result(c.system().getWhenTerminated());
  }

  /** c leaves gracefully; a and b see it removed. */
  private static void leave(Node c) {
    org.apache.pekko.cluster.typed.Cluster.get(c.system()).manager()
        .tell(org.apache.pekko.cluster.typed.Leave.create(c.address()));
    a.await(PeerEvent.Removed.class, c.address());
    b.await(PeerEvent.Removed.class, c.address());
    c.shutdown();
  }
}
