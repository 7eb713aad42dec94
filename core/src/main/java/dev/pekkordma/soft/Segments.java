package dev.pekkordma.soft;

import dev.pekkordma.memory.NativeMemory;

/**
 * A list of memory segments: a gather or scatter list. Each segment of registered memory carries
 * the fence of the region its key was checked against and the generation seen then (and, when
 * the key was a memory window's, the window's too); the provider's own memory (staging buffers,
 * inline data) carries none. Reused by its owner, so
 * walking a request's SGEs allocates nothing.
 *
 * <p>{@link #copy} is the one way the provider moves bytes between segment lists: one bounded
 * chunk at a time, each inside the fences of the registrations it touches.
 */
final class Segments {
  /** The most bytes copied inside one fence: what a deregistration may have to wait for. */
  static final int CHUNK = 256 * 1024;
  /** {@link #copy}'s results: all copied, or which side's registration went away meanwhile. */
  static final int COPIED = 0;
  static final int SOURCE_GONE = 1;
  static final int TARGET_GONE = 2;
  static final int OWNER_GONE = 3;

  private long[] addresses;
  private long[] lengths;
  private AccessFence[] fences;
  private int[] generations;
  private AccessFence[] windows;
  private int[] windowGenerations;
  private int count;
  private long total;

  Segments(int capacity) {
    int n = Math.max(1, capacity);
    addresses = new long[n];
    lengths = new long[n];
    fences = new AccessFence[n];
    generations = new int[n];
    windows = new AccessFence[n];
    windowGenerations = new int[n];
  }

  Segments clear() {
    for (int i = 0; i < count; i++) {
      fences[i] = null;
      windows[i] = null;
    }
    count = 0;
    total = 0;
    return this;
  }

  /** The provider's own memory: no registration can go away under it. */
  Segments add(long address, long length) {
    return add(address, length, null, 0);
  }

  /** Registered memory, checked against {@code fence} in {@code generation}. */
  Segments add(long address, long length, AccessFence fence, int generation) {
    return add(address, length, fence, generation, null, 0);
  }

  /** Registered memory reached through a memory window, checked against both fences. */
  Segments add(long address, long length, AccessFence fence, int generation, AccessFence window,
      int windowGeneration) {
    if (length < 0) throw new IllegalArgumentException("negative segment length " + length);
    if (count == addresses.length) grow();
    addresses[count] = address;
    lengths[count] = length;
    fences[count] = fence;
    generations[count] = generation;
    windows[count] = window;
    windowGenerations[count] = windowGeneration;
    count++;
    total += length;
    return this;
  }

  Segments single(long address, long length) {
    return clear().add(address, length);
  }

  /** Appends {@code other}'s segments (with their fences). */
  Segments addAll(Segments other) {
    for (int i = 0; i < other.count; i++) {
      add(other.addresses[i], other.lengths[i], other.fences[i], other.generations[i],
          other.windows[i], other.windowGenerations[i]);
    }
    return this;
  }

  int count() { return count; }
  long address(int i) { return addresses[i]; }
  long length(int i) { return lengths[i]; }
  long total() { return total; }

  private void grow() {
    int n = count * 2;
    addresses = java.util.Arrays.copyOf(addresses, n);
    lengths = java.util.Arrays.copyOf(lengths, n);
    fences = java.util.Arrays.copyOf(fences, n);
    generations = java.util.Arrays.copyOf(generations, n);
    windows = java.util.Arrays.copyOf(windows, n);
    windowGenerations = java.util.Arrays.copyOf(windowGenerations, n);
  }

  /**
   * Copies {@code len} bytes from {@code src} at {@code srcOffset} into {@code dst} at {@code
   * dstOffset}, inside the fences of both sides and of {@code owner} (the QP on whose behalf it
   * runs; null for none). Returns {@link #COPIED}, or which side's registration closed meanwhile
   * (part of the bytes may have been copied). Both ranges must lie within their lists: callers
   * check lengths first, so running past an end is a provider bug and throws.
   */
  static int copy(Segments src, long srcOffset, Segments dst, long dstOffset, long len,
      AccessFence owner, int ownerGeneration) {
    if (len == 0) return COPIED;
    if (srcOffset < 0 || dstOffset < 0 || len < 0 || srcOffset + len > src.total
        || dstOffset + len > dst.total) {
      throw new IllegalStateException("copy of " + len + " bytes from offset " + srcOffset
          + " of " + src.total + " into offset " + dstOffset + " of " + dst.total);
    }
    int si = 0;
    long so = srcOffset;
    while (so >= src.lengths[si]) so -= src.lengths[si++];
    int di = 0;
    long dof = dstOffset;
    while (dof >= dst.lengths[di]) dof -= dst.lengths[di++];
    while (len > 0) {
      long n = Math.min(CHUNK, Math.min(len, Math.min(src.lengths[si] - so, dst.lengths[di] - dof)));
      int result = copyChunk(src, si, so, dst, di, dof, n, owner, ownerGeneration);
      if (result != COPIED) return result;
      len -= n;
      so += n;
      dof += n;
      if (so == src.lengths[si] && len > 0) { si++; so = 0; }
      if (dof == dst.lengths[di] && len > 0) { di++; dof = 0; }
    }
    return COPIED;
  }

  private static int copyChunk(Segments src, int si, long so, Segments dst, int di, long dof,
      long n, AccessFence owner, int ownerGeneration) {
    if (owner != null && !owner.enter(ownerGeneration)) return OWNER_GONE;
    try {
      if (!src.enter(si)) return SOURCE_GONE;
      try {
        if (!dst.enter(di)) return TARGET_GONE;
        try {
          NativeMemory.copy(src.addresses[si] + so, dst.addresses[di] + dof, n);
          return COPIED;
        } finally {
          dst.exit(di);
        }
      } finally {
        src.exit(si);
      }
    } finally {
      if (owner != null) owner.exit();
    }
  }

  /**
   * Moves {@code len} bytes between this list, from {@code offset}, and {@code array}: into the
   * list when {@code intoList}, else out of it; fenced as {@link #copy}, one chunk at a time.
   * Returns {@link #COPIED}, TARGET_GONE or SOURCE_GONE for this list's side, or OWNER_GONE.
   */
  int transfer(long offset, byte[] array, int arrayOffset, int len, boolean intoList,
      AccessFence owner, int ownerGeneration) {
    if (len == 0) return COPIED;
    if (offset < 0 || len < 0 || offset + len > total || arrayOffset < 0
        || arrayOffset + len > array.length) {
      throw new IllegalStateException("transfer of " + len + " bytes at offset " + offset
          + " of " + total);
    }
    int i = 0;
    long at = offset;
    while (at >= lengths[i]) at -= lengths[i++];
    int done = 0;
    while (done < len) {
      int n = (int) Math.min(CHUNK, Math.min(len - done, lengths[i] - at));
      if (owner != null && !owner.enter(ownerGeneration)) return OWNER_GONE;
      try {
        if (!enter(i)) return intoList ? TARGET_GONE : SOURCE_GONE;
        try {
          if (intoList) NativeMemory.copyFromArray(array, arrayOffset + done, addresses[i] + at, n);
          else NativeMemory.copyToArray(addresses[i] + at, array, arrayOffset + done, n);
        } finally {
          exit(i);
        }
      } finally {
        if (owner != null) owner.exit();
      }
      done += n;
      at += n;
      if (at == lengths[i] && done < len) { i++; at = 0; }
    }
    return COPIED;
  }

  /**
   * Enters segment {@code i}'s fence for an access the caller makes itself (an atomic's 8 bytes);
   * false when its registration closed or changed since the check. Pair with {@link #exit}.
   */
  boolean enter(int i) {
    AccessFence w = windows[i];
    if (w != null && !w.enter(windowGenerations[i])) return false;
    AccessFence f = fences[i];
    if (f == null || f.enter(generations[i])) return true;
    if (w != null) w.exit();
    return false;
  }

  void exit(int i) {
    AccessFence f = fences[i];
    if (f != null) f.exit();
    AccessFence w = windows[i];
    if (w != null) w.exit();
  }
}
