package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** What crosses the network: the coordinators' messages, the connection hello. */
class WireTest {
  // two systems with remoting: a reply-to is only taken from another one
  static final ActorTestKit kit = ActorTestKit.create("WireTest", TestCluster.config(""));
  static final ActorTestKit other = ActorTestKit.create("WireTest", TestCluster.config(""));

  @AfterAll
  static void stop() {
    other.shutdownTestKit();
    kit.shutdownTestKit();
  }

  /** Serialized in {@code kit}, deserialized in {@code to}. */
  private static Object roundTrip(Object o, ActorTestKit to) {
    var serialization = SerializationExtension.get(Adapter.toClassic(kit.system()));
    var serializer = serialization.findSerializerFor(o);
    assertInstanceOf(ProtocolSerializer.class, serializer, "bound in reference.conf");
    return SerializationExtension.get(Adapter.toClassic(to.system())).deserialize(
        serialization.serialize(o).get(), serializer.identifier(),
        ((ProtocolSerializer) serializer).manifest(o)).get();
  }

  private static Object roundTrip(Object o) {
    return roundTrip(o, other);
  }

  @Test
  void messagesSurviveSerialization() {
    Endpoint e = new Endpoint(new Address("pekko", "sys", "127.0.0.1", 2552), -42L, "10.0.0.7",
        7471, 7472, "soft", "soft-roce", "ETHERNET", 16384, 16384, Endpoint.VERSION);
    assertEquals(e, roundTrip(e));
    assertEquals(new Protocol.ConnectToMe(7L), roundTrip(new Protocol.ConnectToMe(7L)));
    TestProbe<Endpoint> probe = kit.createTestProbe();
    var back = (Protocol.Describe) roundTrip(new Protocol.Describe(probe.getRef()));
    back.replyTo().tell(e);
    assertEquals(e, probe.receiveMessage(TestCluster.WAIT));
  }

  @Test
  void aDescribeWhoseReplyToIsAnActorOfThisSystemIsRefused() {
    // else any member could have this one send its endpoint to any actor of its own
    TestProbe<Endpoint> local = kit.createTestProbe();
    var ours = new Protocol.Describe(local.getRef());
    var ex = assertThrows(java.io.NotSerializableException.class, () -> new ProtocolSerializer(
        (ExtendedActorSystem) Adapter.toClassic(kit.system())).fromBinary(
            new ProtocolSerializer((ExtendedActorSystem) Adapter.toClassic(kit.system()))
                .toBinary(ours), "D"));
    assertTrue(ex.getMessage().contains("not an actor of another member"), ex.getMessage());
    var noHost = new java.io.ByteArrayOutputStream();
    try (var out = new java.io.DataOutputStream(noHost)) {
      out.writeUTF("pekko://WireTest/system/pekko-rdma-cluster");
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
    ex = assertThrows(java.io.NotSerializableException.class, () -> new ProtocolSerializer(
        (ExtendedActorSystem) Adapter.toClassic(other.system())).fromBinary(
            noHost.toByteArray(), "D"));
    assertTrue(ex.getMessage().contains("not an actor of another member"), ex.getMessage());
  }

  @Test
  void anUnknownManifestFailsClearly() {
    var s = new ProtocolSerializer((ExtendedActorSystem) Adapter.toClassic(kit.system()));
    var ex = assertThrows(java.io.NotSerializableException.class,
        () -> s.fromBinary(new byte[0], "Z"));
    assertTrue(ex.getMessage().contains("'Z'"));
  }

  @Test
  void theHelloCarriesTheUidAndNothingElseIsTakenForOne() {
    assertEquals(-5L, ConnectPrivateData.uid(ConnectPrivateData.of(-5L)));
    assertNull(ConnectPrivateData.uid("echo please".getBytes()));
    assertNull(ConnectPrivateData.uid(null));
  }

  @Test
  void incompatibilityNamesWhatDiffers() {
    Address a = new Address("pekko", "sys", "127.0.0.1", 1);
    Endpoint soft = new Endpoint(a, 1, "h", 1, 0, "soft", "soft-roce", "ETHERNET", 16, 4096, 1);
    assertNull(soft.incompatibility(soft));
    assertTrue(soft.incompatibility(new Endpoint(a, 1, "h", 1, 0, "native", "InfiniBand",
        "INFINIBAND", 1, 4096, 1)).contains("'native'"));
    assertTrue(soft.incompatibility(new Endpoint(a, 1, "h", 1, 0, "soft", "soft-roce", "ETHERNET",
        16, 4096, 2)).contains("version 2"));
    // what another member names is quoted, not obeyed: it cannot start a log line of its own
    String forged = soft.incompatibility(new Endpoint(a, 1, "h", 1, 0,
        "native\n12:00:00.000 [main] ERROR forged line", "t", "l", 16, 4096, 1));
    assertFalse(forged.contains("\n"), forged);
    assertTrue(forged.contains("native\\u000a12:00"), forged);
    // one that would talk, but advertises what cannot be used
    assertTrue(soft.incompatibility(new Endpoint(a, 1, "h", 70000, 0, "soft", "soft-roce",
        "ETHERNET", 16, 4096, 1)).contains("CM port 70000"));
  }
}
