package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * A peer's private data, decoded: any bytes either give a ring within every documented limit
 * or fail with IllegalArgumentException (never anything else), and a ring within them is
 * exactly what its encoding gives back.
 */
class WireRingPropertyTest {

  /** The limits, said again here rather than read from Wire, as the documentation says them. */
  static boolean withinLimits(long address, int slots, int slotSize) {
    long bytes = (long) slots * slotSize;
    return slots >= 1 && slots <= 65536 && slotSize >= 1 && slotSize <= (1 << 30)
        && bytes <= Integer.MAX_VALUE && Long.compareUnsigned(address, -bytes) <= 0;
  }

  @Property(tries = 2000)
  void anyBytesDecodeToARingWithinTheLimitsOrFailSayingSo(@ForAll @Size(max = 64) byte[] data) {
    decodeOrRefuse(data);
  }

  @Property(tries = 2000)
  void anyGeometryIsTakenExactlyWhenWithinTheLimits(@ForAll("addresses") long address,
      @ForAll int rkey, @ForAll("counts") int slots, @ForAll("counts") int slotSize) {
    byte[] data = new Wire.Ring(address, rkey, slots, slotSize).encode();
    if (withinLimits(address, slots, slotSize)) {
      assertEquals(new Wire.Ring(address, rkey, slots, slotSize), Wire.Ring.decode(data));
    } else {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Wire.Ring.decode(data));
      assertTrue(e.getMessage().contains("slots") || e.getMessage().contains("slot size")
          || e.getMessage().contains("ring of") || e.getMessage().contains("wraps"),
          e.getMessage());
    }
  }

  /** An honest ring with some of its bytes changed, or cut short, or followed by more. */
  @Property(tries = 2000)
  void aForgedOrTruncatedHonestRingIsTakenOnlyWithinTheLimits(
      @ForAll("honest") byte[] honest, @ForAll @Size(max = 4) int[] flips,
      @ForAll @IntRange(min = 0, max = 60) int length) {
    byte[] data = Arrays.copyOf(honest, length);
    for (int f : flips) {
      int at = Math.floorMod(f, Math.max(1, length));
      if (length > 0) data[at] ^= (byte) (1 << (Math.floorMod(f >> 8, 8)));
    }
    decodeOrRefuse(data);
  }

  private static void decodeOrRefuse(byte[] data) {
    Wire.Ring r;
    try {
      r = Wire.Ring.decode(data);
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage() != null && !e.getMessage().isEmpty());
      return;
    }
    assertTrue(data.length >= 28);
    ByteBuffer b = ByteBuffer.wrap(data);
    assertEquals(0x50525354, b.getInt(0));
    assertEquals(4, b.get(4));
    assertEquals(0, data[5] & ~Wire.TAKES_BATCHES, "only the flags this side knows");
    for (int i = 6; i < 8; i++) assertEquals(0, data[i]);
    for (int i = 28; i < data.length; i++) assertEquals(0, data[i]);
    assertTrue(withinLimits(r.address(), r.slots(), r.slotSize()), r.toString());
    assertEquals(new Wire.Ring(b.getLong(8), b.getInt(16), b.getInt(20), b.getInt(24),
        data[5]), r);
  }

  @Provide
  Arbitrary<Long> addresses() {
    return Arbitraries.oneOf(Arbitraries.longs(),
        Arbitraries.longs().between(-(1L << 32), -1),
        Arbitraries.of(0L, 1L, -1L, Long.MAX_VALUE, Long.MIN_VALUE, 0x7f00_0000_0000L));
  }

  @Provide
  Arbitrary<Integer> counts() {
    return Arbitraries.oneOf(Arbitraries.integers(),
        Arbitraries.integers().between(-2, 70_000),
        Arbitraries.of(1 << 16, (1 << 16) + 1, 1 << 30, (1 << 30) + 1, Integer.MAX_VALUE,
            Integer.MIN_VALUE, 32768, 65535));
  }

  @Provide
  Arbitrary<byte[]> honest() {
    return Combinators.combine(Arbitraries.longs().between(0, 1L << 47), Arbitraries.integers(),
        Arbitraries.integers().between(1, 64), Arbitraries.integers().between(1, 1 << 20),
        Arbitraries.of(0, Wire.TAKES_BATCHES))
        .as((a, k, n, s, f) -> new Wire.Ring(a, k, n, s, f).encode());
  }

  @Property(tries = 500)
  void theFlagsSurviveTheTripAndUnknownOnesAreRefused(@ForAll @IntRange(min = 0, max = 255)
      int flags) {
    byte[] data = new Wire.Ring(0x10000, 7, 4, 4096, flags).encode();
    if ((flags & ~Wire.TAKES_BATCHES) == 0) {
      Wire.Ring r = Wire.Ring.decode(data);
      assertEquals(flags == Wire.TAKES_BATCHES, r.takesBatches());
    } else {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> Wire.Ring.decode(data));
      assertTrue(e.getMessage().contains("flags byte 5"), e.getMessage());
    }
  }
}
