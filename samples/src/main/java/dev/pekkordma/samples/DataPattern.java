package dev.pekkordma.samples;

import dev.pekkordma.memory.NativeMemory;

/**
 * The bytes the client sends: chunk {@code i} of a transfer seeded with {@code seed} is an
 * xorshift64* stream started from a mix of both, so any chunk can be produced on its own, in any
 * order, with no allocation.
 */
public final class DataPattern {
  private DataPattern() {}

  /** Writes chunk {@code chunkIndex}'s {@code length} bytes at {@code address}. */
  public static void fill(long address, int length, long seed, long chunkIndex) {
    long x = mix(seed ^ (chunkIndex * 0x9E3779B97F4A7C15L));
    if (x == 0) x = 0x2545F4914F6CDD1DL; // xorshift's only fixed point
    long end = address + (length & ~7L);
    long p = address;
    while (p < end) {
      x ^= x >>> 12;
      x ^= x << 25;
      x ^= x >>> 27;
      NativeMemory.putLong(p, x * 0x2545F4914F6CDD1DL);
      p += 8;
    }
    int tail = length & 7;
    if (tail != 0) {
      x ^= x >>> 12;
      x ^= x << 25;
      x ^= x >>> 27;
      long v = x * 0x2545F4914F6CDD1DL;
      for (int i = 0; i < tail; i++) {
        NativeMemory.putByte(p + i, (byte) (v >>> (8 * i)));
      }
    }
  }

  /** SplitMix64's finaliser: spreads nearby seeds and chunk indexes over the whole state. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
