package dev.pekkordma.streams.impl.datagram;

/**
 * Receives that completed and wait for downstream, in arrival order: their slots stay taken
 * (not posted again) until their datagram goes, so a slow downstream leaves fewer receives
 * posted and the device drops what finds none, as UD does, instead of this side holding more.
 * At most one per receive slot, so it never overflows.
 */
final class CompletedReceives {
  private final int[] slots;
  private final int[] lengths;
  private final int[] flags;
  private final int[] sources;
  private int head;
  private int count;

  CompletedReceives(int capacity) {
    slots = new int[capacity];
    lengths = new int[capacity];
    flags = new int[capacity];
    sources = new int[capacity];
  }

  void add(int slot, int byteLength, int wcFlags, int sourceQp) {
    if (count == slots.length) {
      throw new IllegalStateException("more receives completed than were posted");
    }
    int i = (head + count++) % slots.length;
    slots[i] = slot;
    lengths[i] = byteLength;
    flags[i] = wcFlags;
    sources[i] = sourceQp;
  }

  boolean isEmpty() {
    return count == 0;
  }

  int slot() { return slots[head]; }

  int byteLength() { return lengths[head]; }

  int flags() { return flags[head]; }

  int sourceQp() { return sources[head]; }

  void pop() {
    head = (head + 1) % slots.length;
    count--;
  }
}
