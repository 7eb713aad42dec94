package dev.pekkordma.soft;

import dev.pekkordma.memory.NativeMemory;

/**
 * A list of (address, length) memory segments: a gather or scatter list. Reused by its owner, so
 * walking a request's SGEs allocates nothing.
 */
final class Segments {
  private long[] addresses;
  private int[] lengths;
  private int count;
  private long total;

  Segments(int capacity) {
    addresses = new long[Math.max(1, capacity)];
    lengths = new int[addresses.length];
  }

  Segments clear() {
    count = 0;
    total = 0;
    return this;
  }

  Segments add(long address, int length) {
    if (count == addresses.length) {
      addresses = java.util.Arrays.copyOf(addresses, count * 2);
      lengths = java.util.Arrays.copyOf(lengths, count * 2);
    }
    addresses[count] = address;
    lengths[count] = length;
    count++;
    total += length;
    return this;
  }

  Segments single(long address, int length) {
    return clear().add(address, length);
  }

  int count() { return count; }
  long address(int i) { return addresses[i]; }
  int length(int i) { return lengths[i]; }
  long total() { return total; }

  /** Copies {@code len} bytes from {@code src} at {@code srcOffset} into {@code dst} at {@code dstOffset}. */
  static void copy(Segments src, long srcOffset, Segments dst, long dstOffset, long len) {
    int si = 0;
    long so = srcOffset;
    while (si < src.count && so >= src.lengths[si]) so -= src.lengths[si++];
    int di = 0;
    long dof = dstOffset;
    while (di < dst.count && dof >= dst.lengths[di]) dof -= dst.lengths[di++];
    while (len > 0) {
      long n = Math.min(len, Math.min(src.lengths[si] - so, dst.lengths[di] - dof));
      NativeMemory.copy(src.addresses[si] + so, dst.addresses[di] + dof, n);
      len -= n;
      so += n;
      dof += n;
      if (so == src.lengths[si]) { si++; so = 0; }
      if (len > 0 && dof == dst.lengths[di]) { di++; dof = 0; }
    }
  }

  /** Copies all of this list into one contiguous block at {@code dst}. */
  void gatherTo(long dst) {
    long at = dst;
    for (int i = 0; i < count; i++) {
      NativeMemory.copy(addresses[i], at, lengths[i]);
      at += lengths[i];
    }
  }
}
