package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.io.NotSerializableException;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * The coordinators' messages arrive from other members through Pekko remoting: whatever bytes
 * come under whatever manifest, {@link ProtocolSerializer} gives back a message, or fails with a
 * {@link NotSerializableException} naming the manifest and what is wrong (remoting logs it with
 * the sender and drops the message), never anything else. And an endpoint that decodes but
 * cannot be used is refused by {@link Endpoint#incompatibility} naming the field.
 */
class ProtocolPropertiesTest {
  static ActorTestKit kit;
  static ProtocolSerializer serializer;

  @BeforeContainer
  static void start() {
    kit = ActorTestKit.create("ProtocolPropertiesTest");
    serializer = new ProtocolSerializer((ExtendedActorSystem) Adapter.toClassic(kit.system()));
  }

  @AfterContainer
  static void stop() {
    kit.shutdownTestKit();
  }

  /** Decodes, or returns the failure's message; anything but NotSerializableException fails. */
  static Object decode(byte[] bytes, String manifest) {
    try {
      return serializer.fromBinary(bytes, manifest);
    } catch (NotSerializableException e) {
      assertNotNull(e.getMessage());
      assertTrue(e.getMessage().contains("'" + manifest + "'"), e.getMessage());
      return e.getMessage();
    } catch (Throwable t) {
      throw new AssertionError("manifest '" + manifest + "', " + bytes.length + " bytes "
          + Arrays.toString(Arrays.copyOf(bytes, Math.min(bytes.length, 40))) + ": threw " + t,
          t);
    }
  }

  @Property(tries = 1500)
  void anyBytesUnderAnyManifestDecodeOrFailNamingWhy(@ForAll("manifests") String manifest,
      @ForAll("wireBytes") byte[] bytes) throws NotSerializableException {
    Object o = decode(bytes, manifest);
    if (o instanceof String) return;
    switch (manifest) {
      case "D" -> assertInstanceOf(Protocol.Describe.class, o);
      case "C" -> assertInstanceOf(Protocol.ConnectToMe.class, o);
      case "E" -> assertInstanceOf(Endpoint.class, o);
      default -> fail("manifest '" + manifest + "' gave " + o);
    }
    if (!manifest.equals("D")) { // (a path is resolved, not kept as it came)
      // modified UTF-8 is read leniently (a raw 0, an overlong form): compare what it means
      assertEquals(o, serializer.fromBinary(serializer.toBinary(o), manifest));
    }
  }

  @Property(tries = 500)
  void endpointsRoundTripAndEveryCutOrExtensionIsRefused(@ForAll("endpoints") Endpoint e,
      @ForAll("cuts") int cut) throws NotSerializableException {
    byte[] bytes = serializer.toBinary(e);
    assertEquals(e, serializer.fromBinary(bytes, "E"), "round trip");
    int at = Math.floorMod(cut, bytes.length);
    Object truncated = decode(Arrays.copyOf(bytes, at), "E");
    assertTrue(truncated instanceof String s && s.contains("truncated"), "" + truncated);
    Object longer = decode(Arrays.copyOf(bytes, bytes.length + 1 + (cut & 7)), "E");
    assertTrue(longer instanceof String s && s.contains("after its fields"), "" + longer);
  }

  @Property(tries = 500)
  void anEndpointThatCannotBeUsedIsRefusedNamingTheField(@ForAll("endpoints") Endpoint e) {
    Endpoint ours = new Endpoint(new Address("pekko", "sys", "127.0.0.1", 1), 1, "127.0.0.1",
        7000, 7001, e.provider(), e.transport(), e.linkLayer(), 16384, 4096, e.version());
    String why = ours.incompatibility(e);
    String expected = e.host().isBlank() ? "host"
        : e.port() < 1 || e.port() > 65535 ? "port " + e.port()
        : e.streamPort() < 0 || e.streamPort() > 65535 ? "port " + e.streamPort()
        : e.maxMessage() <= Frames.HEADER ? "frames of " + e.maxMessage()
        : e.maxQpWr() < 2 ? "queues of " + e.maxQpWr() : null;
    if (expected == null) {
      assertNull(why);
    } else {
      assertNotNull(why, "took " + e);
      assertTrue(why.contains(expected), why + " / " + expected);
    }
  }

  // ---------------------------------------------------------------- generators

  @Provide
  Arbitrary<String> manifests() {
    return Arbitraries.frequencyOf(Tuple.of(6, Arbitraries.of("D", "C", "E")),
        Tuple.of(1, Arbitraries.strings().ofMaxLength(3)));
  }

  @Provide
  Arbitrary<Integer> cuts() {
    return Arbitraries.integers();
  }

  /** Arbitrary bytes, and real encodings cut, extended or with a byte changed. */
  @Provide
  Arbitrary<byte[]> wireBytes() {
    Arbitrary<byte[]> real = Arbitraries.oneOf(endpoints().map(e -> serializer.toBinary(e)),
        Arbitraries.longs().map(u -> serializer.toBinary(new Protocol.ConnectToMe(u))));
    Arbitrary<byte[]> changed = real.flatMap(b -> Arbitraries.integers().between(0, b.length)
        .flatMap(at -> Arbitraries.integers().between(0, 2).flatMap(how -> Arbitraries.bytes()
            .map(x -> how == 0 ? Arrays.copyOf(b, at)
                : how == 1 ? Arrays.copyOf(b, b.length + 1 + (x & 7))
                : flip(b, Math.min(at, b.length - 1), x)))));
    return Arbitraries.frequencyOf(Tuple.of(2, real), Tuple.of(4, changed),
        Tuple.of(2, Arbitraries.bytes().array(byte[].class).ofMaxSize(120)));
  }

  private static byte[] flip(byte[] b, int at, byte x) {
    byte[] c = b.clone();
    c[at] = x;
    return c;
  }

  @Provide
  Arbitrary<Endpoint> endpoints() {
    Arbitrary<String> text = Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.of("soft", "soft-roce", "ETHERNET", "127.0.0.1", "10.0.0.7")),
        Tuple.of(1, Arbitraries.strings().ofMaxLength(30)),
        Tuple.of(1, Arbitraries.just("")));
    Arbitrary<Integer> port = Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.integers().between(1, 65535)),
        Tuple.of(1, Arbitraries.of(0, -1, 65536, Integer.MAX_VALUE, Integer.MIN_VALUE)));
    Arbitrary<Integer> size = Arbitraries.frequencyOf(
        Tuple.of(4, Arbitraries.integers().between(16, 1 << 20)),
        Tuple.of(1, Arbitraries.of(0, -1, 1, 9, 10, Integer.MIN_VALUE, Integer.MAX_VALUE)));
    Arbitrary<Address> address = Arbitraries.integers().between(1, 65535)
        .map(p -> new Address("pekko", "Sys", "127.0.0.1", p));
    return Combinators.combine(address, Arbitraries.longs(), text, port, port, text, text)
        .flatAs((a, uid, host, p, sp, provider, transport) -> Combinators.combine(text, size,
            size, Arbitraries.integers().between(0, 3)).as((ll, qp, max, v) -> new Endpoint(a,
                uid, host, p, sp, provider, transport, ll, qp, max, v)));
  }
}
