package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;
import static dev.pekkordma.cluster.TestCluster.result;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cluster.TestCluster.Node;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** connect = lazy: no connection until the first message, whichever side sends it. */
class LazyConnectTest {
  static Node low;
  static Node high;

  @BeforeAll
  static void start() {
    // and without streams listeners: nothing but the CM listener is bound
    String lazy = "pekko-rdma.cluster { connect = lazy, streams = off }";
    Node p = new Node(TestCluster.config(lazy));
    Node q = new Node(TestCluster.config(lazy));
    p.join(p);
    q.join(p);
    p.awaitMembers(2);
    q.awaitMembers(2);
    boolean pLower = Coordinator.compare(Cluster.get(p.system()).selfMember().uniqueAddress(),
        Cluster.get(q.system()).selfMember().uniqueAddress()) < 0;
    low = pLower ? p : q;
    high = pLower ? q : p;
  }

  @AfterAll
  static void stop() {
    if (high != null) high.shutdown();
    if (low != null) low.shutdown();
  }

  @Test
  void theFirstMessageConnectsEvenFromTheSideThatDoesNotConnect() {
    TestCluster.sleep(1500); // endpoints described; an eager member would have connected by now
    assertEquals(low.baseline, low.resources(), "no connection before the first message");
    assertEquals(high.baseline, high.resources(), "no connection before the first message");

    TestProbe<Received<String>> lowInbox = low.kit.createTestProbe();
    low.rdma.channel("lazy", Codec.utf8()).subscribe(lowInbox.getRef());
    TestProbe<Received<String>> highInbox = high.kit.createTestProbe();
    high.rdma.channel("lazy", Codec.utf8()).subscribe(highInbox.getRef());

    // the higher address does not connect: it asks the lower one to
    result(high.rdma.channel("lazy", Codec.utf8()).send(low.address(), "first"));
    assertEquals(new Received<>(high.address(), "first"), lowInbox.receiveMessage(WAIT));
    low.await(PeerEvent.Connected.class, high.address());
    high.await(PeerEvent.Connected.class, low.address());
    result(low.rdma.channel("lazy", Codec.utf8()).send(high.address(), "back"));
    assertEquals(new Received<>(low.address(), "back"), highInbox.receiveMessage(WAIT));
  }

  @Test
  void withoutStreamsListenersAStreamFailsSayingSo() {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (low.rdma.directory().endpoint(high.address()) == null) { // described
      assertTrue(System.nanoTime() < deadline, "high's endpoint never reached low");
      TestCluster.sleep(20);
    }
    var stream = org.apache.pekko.stream.javadsl.Source.single("s").runWith(
        low.rdma.channel("lazy", Codec.utf8()).streamSink(high.address()), low.system());
    var e = assertThrows(AssertionError.class, () -> result(stream));
    Throwable cause = e.getCause() instanceof java.util.concurrent.ExecutionException x
        ? x.getCause() : e.getCause();
    assertInstanceOf(SendFailedException.class, cause, e.toString());
    assertTrue(cause.getMessage().contains("streams = off"), cause.getMessage());
  }
}
