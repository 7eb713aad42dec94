package dev.pekkordma.testing;

import java.util.Arrays;

/**
 * How many random bits a stream of identifiers carries, measured as an attacker would use them:
 * the collision (Rényi-2) entropy of the differences between successive values, estimated from
 * how many pairs of them are equal. A counter or a slot index makes many differences alike and
 * scores low; values drawn at random from 2^n score about n, up to about 2 log2(samples), above
 * which no pair collides and the estimate says "at least" that.
 */
public final class CollisionEntropy {
  private CollisionEntropy() {}

  /** The estimate in bits for {@code values} taken modulo 2^{@code bits}. */
  public static double ofDifferences(int[] values, int bits) {
    long mask = bits == 32 ? 0xffffffffL : (1L << bits) - 1;
    long[] d = new long[values.length - 1];
    for (int i = 0; i < d.length; i++) d[i] = (values[i + 1] - (long) values[i]) & mask;
    Arrays.sort(d);
    long pairs = 0;
    int run = 1;
    for (int i = 1; i <= d.length; i++) {
      if (i < d.length && d[i] == d[i - 1]) {
        run++;
      } else {
        pairs += (long) run * (run - 1) / 2;
        run = 1;
      }
    }
    double all = (double) d.length * (d.length - 1) / 2;
    return -Math.log(Math.max(pairs, 1) / all) / Math.log(2);
  }
}
