package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The frame parser and the credit check, on any bytes and any schedule: each is held to a model
 * written here from the wire format (Frames' javadoc) and the credit rules, independently of the
 * code under test. Neither ever fails any other way than with a {@link ProtocolViolation} naming
 * what is wrong.
 */
class FramePropertiesTest {
  static final int MAX = ClusterSettings.MAX_RECEIVE_DEPTH;

  /** What the model says of a frame's bytes: null when well-formed, else the words expected. */
  static String malformed(byte[] b, int capacity) {
    int len = b.length;
    if (len < 9) return "shorter than its 9-byte header";
    if (len > capacity) return "longer than the " + capacity + "-byte receive buffer";
    ByteBuffer v = ByteBuffer.wrap(b);
    byte kind = v.get(0);
    if (kind != 1 && kind != 2) return "unknown frame kind " + kind;
    if (v.getInt(1) < 0) return "a frame grants " + v.getInt(1) + " credits";
    if (kind == 2 && (len != 9 || v.getInt(5) != 0)) return "a credit frame of " + len + " bytes";
    return null;
  }

  /** The bytes as they lie in a receive buffer of {@code capacity} bytes (the NIC's part). */
  static ByteBuffer received(byte[] b, int capacity) {
    ByteBuffer r = ByteBuffer.allocateDirect(capacity);
    r.put(b, 0, Math.min(b.length, capacity)).clear();
    return r;
  }

  @Property(tries = 3000)
  void anyBytesAreAWellFormedFrameOrRefusedNamingWhy(@ForAll("frameBytes") byte[] b,
      @ForAll @IntRange(min = 0, max = 48) int capacity) {
    ByteBuffer receive = received(b, capacity);
    String expected = malformed(b, capacity);
    Frames.ArrivedFrame f;
    try {
      f = Frames.read(receive, b.length);
    } catch (ProtocolViolation v) {
      assertNotNull(expected, "refused a well-formed frame: " + v.getMessage());
      assertTrue(v.getMessage().contains(expected), v.getMessage() + " / " + expected);
      return;
    }
    assertNull(expected, "took a malformed frame");
    ByteBuffer v = ByteBuffer.wrap(b);
    assertEquals(b[0], f.kind());
    assertEquals(v.getInt(1), f.grant());
    assertEquals(v.getInt(5), f.channel());
    if (f.kind() == Frames.CREDIT) {
      assertNull(f.message());
    } else {
      assertArrayEquals(Arrays.copyOfRange(b, 9, b.length), f.message().toArray());
      // the receive is reposted at once: the message must not be a view of it
      receive.put(capacity - 1, (byte) (receive.get(capacity - 1) + 1));
      assertArrayEquals(Arrays.copyOfRange(b, 9, b.length), f.message().toArray());
    }
    assertEquals(0, receive.position(), "the receive buffer is read, not consumed");
  }

  /**
   * A peer's frames as the receive path meets them: arbitrary bytes, and well-formed frames of
   * either kind with any grant and channel, truncated, extended or with one byte changed.
   */
  @Provide
  Arbitrary<byte[]> frameBytes() {
    Arbitrary<byte[]> wellFormed = Arbitraries.integers().between(1, 2).flatMap(kind ->
        Arbitraries.oneOf(Arbitraries.integers().between(-3, 20),
            Arbitraries.of(Integer.MAX_VALUE, Integer.MIN_VALUE, MAX, MAX + 1)).flatMap(grant ->
            Arbitraries.oneOf(Arbitraries.just(0), Arbitraries.integers()).flatMap(channel ->
                Arbitraries.bytes().array(byte[].class).ofMaxSize(kind == 2 ? 2 : 30)
                    .map(m -> HostilePeer.frame(kind, grant, channel, m)))));
    Arbitrary<byte[]> mutated = wellFormed.flatMap(f -> Arbitraries.integers()
        .between(0, f.length - 1).flatMap(at -> Arbitraries.integers().between(0, 3)
            .flatMap(how -> Arbitraries.bytes().map(x -> mutate(f, at, how, x)))));
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(3, wellFormed),
        net.jqwik.api.Tuple.of(3, mutated),
        net.jqwik.api.Tuple.of(1, Arbitraries.bytes().array(byte[].class).ofMaxSize(40)));
  }

  private static byte[] mutate(byte[] f, int at, int how, byte x) {
    switch (how) {
      case 0:
        return Arrays.copyOf(f, at); // truncated
      case 1:
        return Arrays.copyOf(f, f.length + 1 + (x & 15)); // longer than it says
      default: {
        byte[] g = f.clone();
        g[at] = x;
        return g;
      }
    }
  }

  // ---------------------------------------------------------------- credits

  /**
   * A schedule of this side's frames (each granting what was re-posted), re-posts, and the
   * peer's frames with grants well-behaved, forged, replayed or overflowing: the check refuses
   * exactly what the model refuses, changes nothing when it refuses, and no counter leaves its
   * bounds.
   */
  @Property(tries = 1000)
  void creditsRefuseExactlyWhatBreaksTheRules(
      @ForAll @IntRange(min = 2, max = 64) int posted,
      @ForAll @Size(max = 200) List<@From("steps") int[]> steps) {
    Credits c = new Credits(posted);
    long available = 1;
    long owed = posted - 1;
    long allowance = 1;
    int lastGrant = 0;
    for (int[] s : steps) {
      switch (s[0]) {
        case 0 -> { // this side sends a frame, if it may
          if (available < 1) continue;
          assertEquals(owed, c.take());
          available--;
          allowance += owed;
          owed = 0;
        }
        case 1 -> { // this side re-posts receives (never more than it has)
          int n = (int) Math.min(s[1] & 7, posted - owed);
          c.reposted(n);
          owed += n;
        }
        default -> { // a frame of the peer: s[1] data?, s[2] grant (or -1: replay the last)
          boolean data = s[1] == 1;
          int grant = s[2] == -1 ? lastGrant : s[2];
          lastGrant = grant;
          String expected = allowance < (data ? 2 : 1) ? "beyond the credits"
              : grant < 0 || available + grant > MAX ? "more than the " + MAX : null;
          try {
            c.arrived(data, grant);
            assertNull(expected, "took a frame the rules refuse");
            allowance--;
            available += grant;
          } catch (ProtocolViolation v) {
            assertNotNull(expected, "refused a frame within the rules: " + v.getMessage());
            assertTrue(v.getMessage().contains(expected), v.getMessage());
          }
        }
      }
      assertEquals(available, c.available());
      assertEquals(allowance, c.allowance());
      assertEquals(owed, c.owed());
      assertTrue(c.available() >= 0 && c.available() <= MAX && c.allowance() >= 0);
    }
  }

  @Provide
  Arbitrary<int[]> steps() {
    Arbitrary<Integer> grants = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, Arbitraries.integers().between(0, 8)),
        net.jqwik.api.Tuple.of(2, Arbitraries.just(-1)), // a replay
        net.jqwik.api.Tuple.of(1, Arbitraries.of(Integer.MAX_VALUE, Integer.MIN_VALUE, MAX,
            MAX / 2, -2)),
        net.jqwik.api.Tuple.of(1, Arbitraries.integers()));
    return Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(2, Arbitraries.just(new int[] {0, 0, 0})),
        net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(0, 7)
            .map(n -> new int[] {1, n, 0})),
        net.jqwik.api.Tuple.of(4, Arbitraries.integers().between(0, 1).flatMap(d ->
            grants.map(g -> new int[] {2, d, g}))));
  }
}
