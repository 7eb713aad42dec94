package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;
import static dev.pekkordma.cluster.TestCluster.result;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cluster.PeerEvent.Reason;
import dev.pekkordma.cluster.PeerEvent.Refused;
import dev.pekkordma.cluster.TestCluster.Node;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.function.Function;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.Leave;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Members that cannot be connected to: each ends in a Refused event (and an error in the log),
 * messages to it fail at once, and nothing hangs or leaks.
 */
class BadPeersTest {
  static final String QUICK = "pekko-rdma.cluster.connect-wait = 3s";
  static Node x;

  @BeforeAll
  static void start() {
    x = new Node(TestCluster.config(QUICK));
    x.join(x);
    x.awaitMembers(1);
  }

  @AfterAll
  static void stop() {
    if (x != null) x.shutdown();
  }

  @Test
  void twoMembersAdvertisingOneEndpointAreBothRefusedUntilOneLeaves() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort(); // a number for both to claim; nothing listens there
    }
    String same = QUICK + "\npekko-rdma.cluster { advertise-host = 127.0.0.1, advertise-port = "
        + port + " }";
    Node y = new Node(TestCluster.config(same));
    Node z = new Node(TestCluster.config(same));
    y.join(x);
    z.join(x);
    try {
      Refused ry = x.await(Refused.class, y.address());
      Refused rz = x.await(Refused.class, z.address());
      assertEquals(Reason.ENDPOINT_CONFLICT, ry.reason());
      assertEquals(Reason.ENDPOINT_CONFLICT, rz.reason());
      assertTrue(ry.detail().contains("127.0.0.1:" + port) && ry.detail()
          .contains(z.address().toString()), ry.detail());
      // y sees z claim its own endpoint
      assertTrue(y.await(Refused.class, z.address()).detail().contains("this member"));
      SendFailedException f =
          failure(x.rdma.channel("conflict", Codec.utf8()).send(y.address(), "hi"));
      assertTrue(f.getMessage().contains("advertises RDMA endpoint"), f.getMessage());
      x.awaitResources(x.baseline); // an attempt begun before the conflict showed is undone

      // y goes: z alone has the endpoint now, but it is not listening there
      Cluster.get(y.system()).manager().tell(Leave.create(y.address()));
      x.await(PeerEvent.Removed.class, y.address());
      result(y.system().getWhenTerminated());
    } finally {
      y.shutdown();
      z.shutdown();
    }
    x.await(PeerEvent.Removed.class, z.address());
    x.awaitResources(x.baseline);
  }

  @Test
  void aMemberOnANativeDeviceIsIncompatible() {
    ActorTestKit n = fakeMember(self -> new Endpoint(self.address(), self.longUid(), "127.0.0.1",
        4791, 0, "native", "InfiniBand", "INFINIBAND", 16384, 4096, Endpoint.VERSION));
    try {
      Address member = address(n);
      Refused r = x.await(Refused.class, member);
      assertEquals(Reason.INCOMPATIBLE, r.reason());
      assertTrue(r.detail().contains("'native'") && r.detail().contains("'soft'"), r.detail());
      SendFailedException f = failure(x.rdma.channel("native", Codec.utf8()).send(member, "hi"));
      assertTrue(f.getMessage().contains("cannot be reached over RDMA"), f.getMessage());
    } finally {
      n.shutdownTestKit();
    }
    x.awaitResources(x.baseline);
  }

  @Test
  void aMemberThatNeverDescribesItsEndpointIsRefused() {
    ActorTestKit s = fakeMember(null);
    try {
      Address member = address(s);
      Refused r = x.await(Refused.class, member);
      assertEquals(Reason.NO_ANSWER, r.reason());
      assertTrue(r.detail().contains("did not describe it"), r.detail());
      SendFailedException f = failure(x.rdma.channel("silent", Codec.utf8()).send(member, "hi"));
      assertTrue(f.getMessage().contains("did not describe it"), f.getMessage());
    } finally {
      s.shutdownTestKit();
    }
    x.awaitResources(x.baseline);
  }

  @Test
  void aMemberWhoseEndpointNeverAnswersIsRefused() throws IOException {
    // a TCP listener that takes connections and never says a word: no CM handshake completes
    try (ServerSocket silent = new ServerSocket(0, 16, InetAddress.getLoopbackAddress())) {
      ActorTestKit q = fakeMember(self -> new Endpoint(self.address(), self.longUid(), "127.0.0.1",
          silent.getLocalPort(), 0, "soft", "soft-roce", "ETHERNET", 16384, 4096, Endpoint.VERSION));
      try {
        Address member = address(q);
        var waiting = x.rdma.channel("unanswered", Codec.utf8()).send(member, "hi");
        Refused r = x.await(Refused.class, member);
        assertEquals(Reason.NO_ANSWER, r.reason());
        assertTrue(r.detail().contains("connect-wait"), r.detail());
        // the message that waited for the connection failed with the reason
        String why = failure(waiting).getMessage();
        assertTrue(why.contains("connect-wait"), why);
      } finally {
        q.shutdownTestKit();
      }
    }
    x.awaitResources(x.baseline);
  }

  /**
   * A member that registers under the endpoint key but is not an RdmaCluster: it describes the
   * endpoint {@code describe} makes of its address, or (null) never answers.
   */
  private static ActorTestKit fakeMember(Function<UniqueAddress, Endpoint> describe) {
    ActorTestKit kit = ActorTestKit.create(TestCluster.NAME, TestCluster.config(QUICK));
    UniqueAddress self = Cluster.get(kit.system()).selfMember().uniqueAddress();
    Behavior<Protocol.Request> fake = Behaviors.receive(Protocol.Request.class)
        .onMessage(Protocol.Describe.class, d -> {
          if (describe != null) d.replyTo().tell(describe.apply(self));
          return Behaviors.same();
        })
        .onMessage(Protocol.ConnectToMe.class, c -> Behaviors.same())
        .build();
    var ref = kit.spawn(fake, "fake-endpoint");
    kit.system().receptionist().tell(Receptionist.register(Protocol.KEY, ref));
    Cluster.get(kit.system()).manager().tell(Join.create(x.address()));
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (java.util.stream.StreamSupport.stream(
        Cluster.get(x.system()).state().getMembers().spliterator(), false)
        .noneMatch(m -> m.uniqueAddress().equals(self)
            && m.status() == org.apache.pekko.cluster.MemberStatus.up())) {
      if (System.nanoTime() > deadline) throw new AssertionError(self + " did not come up");
      TestCluster.sleep(20);
    }
    return kit;
  }

  private static Address address(ActorTestKit kit) {
    return Cluster.get(kit.system()).selfMember().address();
  }

  private static SendFailedException failure(java.util.concurrent.CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().get(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      return assertInstanceOf(SendFailedException.class, e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("the send succeeded");
  }
}
