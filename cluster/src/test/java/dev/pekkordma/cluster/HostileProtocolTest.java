package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;
import static dev.pekkordma.cluster.TestCluster.result;
import static org.junit.jupiter.api.Assertions.*;

import ch.qos.logback.classic.Level;
import dev.pekkordma.cluster.PeerEvent.Reason;
import dev.pekkordma.cluster.PeerEvent.Refused;
import dev.pekkordma.cluster.TestCluster.Node;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.Function;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Members whose coordinator messages are garbage on the wire: their serializer, bound in their
 * config under our serializer's name and identifier, writes whatever a test chooses. x's
 * remoting hands those bytes to {@link ProtocolSerializer}, which refuses them naming what is
 * wrong (remoting logs that with the sender's address and drops the message); x refuses a member
 * that never described a usable endpoint, and goes on with y as before.
 */
class HostileProtocolTest {
  static Node x;
  static Node y;
  static LogCapture log;
  static Channel<String> xLegit;
  static TestProbe<Received<String>> yInbox;
  static dev.pekkordma.verbs.ResourceCounts baseline;

  @BeforeAll
  static void start() {
    log = LogCapture.install();
    x = new Node(TestCluster.config(""));
    y = new Node(TestCluster.config(""));
    x.join(x);
    y.join(x);
    x.await(PeerEvent.Connected.class, y.address());
    xLegit = x.rdma.channel("legit", Codec.utf8());
    yInbox = y.kit.createTestProbe();
    y.rdma.channel("legit", Codec.utf8()).subscribe(yInbox.getRef());
    baseline = x.resources();
  }

  @AfterAll
  static void stop() {
    if (y != null) y.shutdown();
    if (x != null) x.shutdown();
    if (log != null) log.uninstall();
  }

  /** Writes what {@link #write} says for each message; reads as ours does. */
  public static final class GarbageSerializer extends SerializerWithStringManifest {
    /** The manifest and bytes to send for a message; null: as ours would. */
    static volatile Function<Object, Object[]> write = o -> null;
    private final ProtocolSerializer real;

    public GarbageSerializer(ExtendedActorSystem system) {
      real = new ProtocolSerializer(system);
    }

    @Override
    public int identifier() {
      return ProtocolSerializer.IDENTIFIER;
    }

    @Override
    public String manifest(Object o) {
      Object[] w = write.apply(o);
      return w != null ? (String) w[0] : real.manifest(o);
    }

    @Override
    public byte[] toBinary(Object o) {
      Object[] w = write.apply(o);
      return w != null ? (byte[]) w[1] : real.toBinary(o);
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
      return real.fromBinary(bytes, manifest);
    }
  }

  // ---------------------------------------------------------------- endpoints

  @Test
  void aTruncatedEndpointIsRefusedAndTheMemberWithIt() {
    garbledEndpoint(b -> Arrays.copyOf(b, b.length / 2), "E", "truncated");
  }

  @Test
  void anEndpointWithAnOversizedLengthIsRefused() {
    // the first string claims 65535 bytes, and 20 follow
    garbledEndpoint(b -> {
      byte[] c = Arrays.copyOf(b, 26);
      c[4] = (byte) 0xff;
      c[5] = (byte) 0xff;
      return c;
    }, "E", "truncated");
  }

  @Test
  void anEndpointWithBytesAfterItsFieldsIsRefused() {
    garbledEndpoint(b -> Arrays.copyOf(b, b.length + 5), "E", "after its fields");
  }

  @Test
  void anUnknownManifestIsRefused() {
    garbledEndpoint(b -> b, "Q", "unknown manifest");
  }

  @Test
  void anEndpointThatCannotBeUsedIsRefusedNamingTheField() {
    ActorTestKit m = member(self -> new Endpoint(self.address(), self.longUid(), "127.0.0.1",
        70000, 0, "soft", "soft-roce", "ETHERNET", 16384, 4096, Endpoint.VERSION));
    try {
      Refused r = x.await(Refused.class, address(m));
      assertEquals(Reason.INCOMPATIBLE, r.reason());
      assertTrue(r.detail().contains("CM port 70000"), r.detail());
    } finally {
      m.shutdownTestKit();
    }
    legitTrafficFlows();
  }

  // ---------------------------------------------------------------- requests to x

  @Test
  void aGarbledConnectToMeAndADescribeAimedAtOneOfXsActorsAreRefused() throws IOException {
    TestProbe<Endpoint> xActor = x.kit.createTestProbe(); // what a hostile reply-to would hit
    byte[] aimed = utf(xActor.getRef().path().toSerializationFormatWithAddress(x.address()));
    GarbageSerializer.write = o -> o instanceof Protocol.ConnectToMe
        ? new Object[] {"C", new byte[] {1, 2, 3}}
        : o instanceof Protocol.Describe ? new Object[] {"D", aimed} : null;
    ActorTestKit m = member(self -> new Endpoint(self.address(), self.longUid(), "127.0.0.1",
        1, 0, "soft", "soft-roce", "ETHERNET", 16384, 4096, Endpoint.VERSION));
    try {
      int mark = log.mark();
      ActorRef<Protocol.Request> xCoordinator = coordinatorOf(m, x);
      xCoordinator.tell(new Protocol.ConnectToMe(42));
      xCoordinator.tell(new Protocol.Describe(m.createTestProbe(Endpoint.class).getRef()));
      String from = address(m).toString();
      log.await(mark, Level.WARN, l -> l.contains(from) && l.contains("'C' refused: truncated"),
          WAIT);
      log.await(mark, Level.WARN, l -> l.contains(from)
          && l.contains("not an actor of another member"), WAIT);
      xActor.expectNoMessage(Duration.ofMillis(300));
    } finally {
      GarbageSerializer.write = o -> null;
      m.shutdownTestKit();
    }
    legitTrafficFlows();
  }

  // ---------------------------------------------------------------- the checks

  /**
   * A member whose endpoint reaches x as {@code garble} makes of its real bytes, under {@code
   * manifest}: x's remoting logs the refusal naming the member and {@code what}, and x refuses
   * the member as not describing its endpoint.
   */
  private static void garbledEndpoint(Function<byte[], byte[]> garble, String manifest,
      String what) {
    int mark = log.mark();
    GarbageSerializer.write = o -> o instanceof Endpoint e ? new Object[] {manifest,
        garble.apply(new ProtocolSerializer((ExtendedActorSystem)
            org.apache.pekko.actor.typed.javadsl.Adapter.toClassic(x.system())).toBinary(e))}
        : null;
    ActorTestKit m = member(self -> new Endpoint(self.address(), self.longUid(), "127.0.0.1",
        1, 0, "soft", "soft-roce", "ETHERNET", 16384, 4096, Endpoint.VERSION));
    try {
      String from = address(m).toString();
      String line = log.await(mark, Level.WARN, l -> l.contains(from)
          && l.contains("'" + manifest + "' refused") && l.contains(what), WAIT);
      Refused r = x.await(Refused.class, address(m));
      assertEquals(Reason.NO_ANSWER, r.reason(), line);
      assertTrue(r.detail().contains("did not describe it"), r.detail());
    } finally {
      GarbageSerializer.write = o -> null;
      m.shutdownTestKit();
    }
    legitTrafficFlows();
  }

  private static void legitTrafficFlows() {
    result(xLegit.send(y.address(), "still here"));
    assertEquals(new Received<>(x.address(), "still here"), yInbox.receiveMessage(WAIT));
    assertFalse(x.system().whenTerminated().isCompleted());
    x.awaitResources(baseline);
  }

  /** A member with the garbage serializer that describes {@code describe} of itself. */
  private static ActorTestKit member(Function<UniqueAddress, Endpoint> describe) {
    ActorTestKit kit = ActorTestKit.create(TestCluster.NAME, TestCluster.config(
        "pekko.actor.serializers.pekko-rdma-cluster = \""
            + GarbageSerializer.class.getName() + "\""));
    UniqueAddress self = Cluster.get(kit.system()).selfMember().uniqueAddress();
    Behavior<Protocol.Request> fake = Behaviors.receive(Protocol.Request.class)
        .onMessage(Protocol.Describe.class, d -> {
          d.replyTo().tell(describe.apply(self));
          return Behaviors.same();
        })
        .onMessage(Protocol.ConnectToMe.class, c -> Behaviors.same())
        .build();
    kit.system().receptionist().tell(Receptionist.register(Protocol.KEY,
        kit.spawn(fake, "fake-endpoint")));
    Cluster.get(kit.system()).manager().tell(Join.create(x.address()));
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (java.util.stream.StreamSupport.stream(
        Cluster.get(x.system()).state().getMembers().spliterator(), false)
        .noneMatch(mb -> mb.uniqueAddress().equals(self) && mb.status() == MemberStatus.up())) {
      if (System.nanoTime() > deadline) throw new AssertionError(self + " did not come up");
      TestCluster.sleep(20);
    }
    return kit;
  }

  /** {@code target}'s coordinator, as member {@code m} finds it in the Receptionist. */
  private static ActorRef<Protocol.Request> coordinatorOf(ActorTestKit m, Node target) {
    TestProbe<Receptionist.Listing> listings = m.createTestProbe();
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      m.system().receptionist().tell(Receptionist.find(Protocol.KEY, listings.getRef()));
      for (ActorRef<Protocol.Request> r : listings.receiveMessage(WAIT)
          .getServiceInstances(Protocol.KEY)) {
        if (r.path().address().equals(target.address())) return r;
      }
      TestCluster.sleep(50);
    }
    throw new AssertionError(address(m) + " did not find " + target.address() + "'s coordinator");
  }

  private static org.apache.pekko.actor.Address address(ActorTestKit kit) {
    return Cluster.get(kit.system()).selfMember().address();
  }

  private static byte[] utf(String s) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(b)) {
      out.writeUTF(s);
    }
    return b.toByteArray();
  }
}
