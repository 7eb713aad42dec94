package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.WcStatus;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.util.ByteString;
import org.slf4j.LoggerFactory;

/**
 * The link's receive path ({@link Inbound}, with the {@link Credits} of one connection) fed with
 * what really arrived over a software-provider RC connection: each try connects a sender to a
 * receiver whose receives are as small as a member's could be, posts a generated sequence of
 * legitimate, malformed, truncated, oversized, forged and replayed frames as SENDs, and hands
 * each receive completion to the receive path as the link does. Whatever was sent, the receive
 * path refuses exactly the first frame a model of the protocol refuses, naming what it broke,
 * hands the application exactly the well-formed messages before it (each from the member, none
 * for a channel not open), takes nothing after it, and the connection's resources all go back.
 *
 * <p>This is the seam rather than a whole member: a member that breaks the protocol is refused
 * for good, so each try would need a new cluster member; {@link HostileLinkTest} does that, once
 * per attack.
 */
class ReceivePathPropertiesTest {
  static final int DEPTH = 16;
  static final Address MEMBER = new Address("pekko", "Hostile", "127.0.0.1", 1);
  static final int SEAM = "seam".hashCode();
  static final int OTHER = "other".hashCode();
  static final int CLOSED = 0x7e57;
  static ActorTestKit kit;
  static RdmaProvider provider;
  static ResourceCounts before;
  static Channels channels;
  static TestProbe<Received<ByteString>> seam;
  static TestProbe<Received<ByteString>> other;

  @BeforeContainer
  static void start() {
    kit = ActorTestKit.create("ReceivePathPropertiesTest");
    provider = SoftWire.provider();
    before = provider.liveResources();
    channels = new Channels();
    channels.open("seam", Codec.bytes());
    channels.open("other", Codec.bytes());
    seam = kit.createTestProbe();
    other = kit.createTestProbe();
    channels.subscribe(SEAM, seam.getRef());
    channels.subscribe(OTHER, other.getRef());
  }

  @AfterContainer
  static void stop() {
    try {
      assertEquals(before, provider.liveResources(), "the provider's live resources");
    } finally {
      provider.close();
      kit.shutdownTestKit();
    }
  }

  @Property(tries = 150)
  void whatArrivesIsTakenExactlyAsTheProtocolSays(
      @ForAll @IntRange(min = 16, max = 96) int receiveSize,
      @ForAll @IntRange(min = 2, max = DEPTH) int granted,
      @ForAll @Size(min = 1, max = 12) List<@From("steps") Step> steps) {
    List<byte[]> frames = new ArrayList<>();
    for (Step s : steps) frames.add(s.bytes(frames, receiveSize));

    // the model: the first frame it refuses and why, and what reaches each channel before it
    int refusedAt = -1;
    String why = null;
    List<ByteString> toSeam = new ArrayList<>();
    List<ByteString> toOther = new ArrayList<>();
    long allowance = granted; // the peer's hello credit and what this side's hello granted
    long available = 0; // this side's hello used its one credit
    for (int i = 0; i < frames.size() && why == null; i++) {
      byte[] f = frames.get(i);
      why = FramePropertiesTest.malformed(f, receiveSize);
      if (why == null) {
        ByteBuffer v = ByteBuffer.wrap(f);
        boolean data = f[0] == Frames.DATA;
        int grant = v.getInt(1);
        if (allowance < (data ? 2 : 1)) {
          why = "beyond the credits";
        } else if (available + grant > Credits.MAX) {
          why = "more than the " + Credits.MAX;
        } else {
          allowance--;
          available += grant;
          ByteString m = ByteString.fromArray(Arrays.copyOfRange(f, 9, f.length));
          if (data && v.getInt(5) == SEAM) toSeam.add(m);
          if (data && v.getInt(5) == OTHER) toOther.add(m);
        }
      }
      if (why != null) refusedAt = i;
    }

    // the wire and the receive path, as the link drives it
    Credits flow = new Credits(granted);
    flow.take(); // this side's hello, granting all but one: the peer may send `granted` frames
    Inbound inbound = new Inbound(MEMBER, channels, LoggerFactory.getLogger(getClass()));
    int actualAt = -1;
    String actual = null;
    try (SoftWire wire = new SoftWire(provider, receiveSize, DEPTH)) {
      wire.send(frames);
      List<SoftWire.Arrival> arrivals = wire.take(frames.size());
      assertTrue(arrivals.size() >= frames.size(), "every SEND took a receive: " + arrivals);
      for (int i = 0; i < arrivals.size() && actual == null; i++) {
        SoftWire.Arrival a = arrivals.get(i);
        if (a.status() != WcStatus.SUCCESS) {
          actual = Inbound.failedReceive(a.status(), receiveSize);
          assertNotNull(actual, "frame " + i + " completed " + a.status());
        } else {
          try {
            inbound.accept(a.receive(), a.length(), flow);
          } catch (ProtocolViolation v) {
            actual = v.getMessage();
          }
        }
        if (actual != null) actualAt = i;
        assertTrue(flow.available() >= 0 && flow.available() <= Credits.MAX
            && flow.allowance() >= 0, "counters in bounds");
      }
    }
    assertEquals(refusedAt, actualAt, "the frame refused (" + actual + "; model: " + why + ")");
    if (why != null) assertTrue(actual.contains(why), actual + " / model: " + why);
    assertEquals(toSeam, messages(seam, toSeam.size()));
    assertEquals(toOther, messages(other, toOther.size()));
  }

  private static List<ByteString> messages(TestProbe<Received<ByteString>> probe, int n) {
    List<ByteString> got = new ArrayList<>();
    for (Received<ByteString> r : probe.receiveSeveralMessages(n, Duration.ofSeconds(3))) {
      assertEquals(MEMBER, r.from());
      got.add(r.message());
    }
    probe.expectNoMessage(Duration.ofMillis(2));
    return got;
  }

  // ---------------------------------------------------------------- what the peer sends

  /** One frame of the peer, made when its place in the sequence is known (a replay needs it). */
  record Step(String kind, int a, int b) {
    byte[] bytes(List<byte[]> before, int receiveSize) {
      int room = receiveSize - Frames.HEADER;
      byte[] text = ("m" + a).repeat(1 + (b & 31)).getBytes(StandardCharsets.UTF_8);
      byte[] fits = Arrays.copyOf(text, Math.min(text.length, room));
      return switch (kind) {
        case "data" -> HostilePeer.frame(1, 0, SEAM, fits);
        case "other" -> HostilePeer.frame(1, 0, OTHER, fits);
        case "credit" -> HostilePeer.credit(0);
        case "closed-channel" -> HostilePeer.frame(1, 0, CLOSED, fits);
        case "truncated" -> Arrays.copyOf(HostilePeer.frame(1, 0, SEAM, fits), b & 7);
        case "empty" -> new byte[0];
        case "unknown-kind" -> HostilePeer.frame(3 + (a & 0x7f), 0, SEAM, fits);
        case "grant" -> HostilePeer.frame(1 + (b & 1), a, (b & 1) == 1 ? 0 : SEAM,
            (b & 1) == 1 ? new byte[0] : fits); // any grant: forged, negative, overflowing
        case "credit-with-body" -> HostilePeer.frame(2, 0, b & 1, new byte[1 + (a & 3)]);
        case "oversized" -> HostilePeer.frame(1, 0, SEAM, new byte[room + 1 + (b & 63)]);
        case "replay" -> before.isEmpty() ? HostilePeer.credit(0)
            : before.get(Math.floorMod(a, before.size())).clone();
        default -> throw new IllegalArgumentException(kind);
      };
    }
  }

  @Provide
  Arbitrary<Step> steps() {
    Arbitrary<Integer> grants = Arbitraries.frequencyOf(
        Tuple.of(3, Arbitraries.integers().between(0, 8)),
        Tuple.of(1, Arbitraries.of(Integer.MAX_VALUE, Integer.MIN_VALUE, -1, Credits.MAX,
            Credits.MAX + 1)),
        Tuple.of(1, Arbitraries.integers()));
    Arbitrary<Integer> any = Arbitraries.integers();
    return Arbitraries.frequencyOf(
        Tuple.of(8, any.map(a -> new Step("data", a, a))),
        Tuple.of(2, any.map(a -> new Step("other", a, a))),
        Tuple.of(3, any.map(a -> new Step("credit", a, a))),
        Tuple.of(1, any.map(a -> new Step("closed-channel", a, a))),
        Tuple.of(1, any.map(a -> new Step("truncated", a, a))),
        Tuple.of(1, any.map(a -> new Step("empty", a, a))),
        Tuple.of(1, any.map(a -> new Step("unknown-kind", a, a))),
        Tuple.of(2, grants.flatMap(g -> any.map(b -> new Step("grant", g, b)))),
        Tuple.of(1, any.map(a -> new Step("credit-with-body", a, a))),
        Tuple.of(1, any.map(a -> new Step("oversized", a, a))),
        Tuple.of(2, any.map(a -> new Step("replay", a, a))));
  }
}
