package dev.pekkordma.streams.impl;

/**
 * What arrived, in order, until downstream takes it: each data write's length and whether more
 * writes continue its ByteString or it carries several (a BATCH), the ring (by generation) it was written into, the peer's RING
 * writes (which take a slot and carry nothing for downstream), and the peer's FIN. As many as
 * receives are posted, which the peer's credits bound: one more is the peer writing without a
 * credit.
 */
final class ArrivedWrites {
  static final byte END = 0;
  static final byte MORE = 1;
  static final byte FIN = 2;
  static final byte SKIP = 3;
  static final byte BATCH = 4;

  private final int[] length;
  private final byte[] kind;
  private final int[] ring;
  private int head;
  private int count;

  ArrivedWrites(int capacity) {
    length = new int[capacity];
    kind = new byte[capacity];
    ring = new int[capacity];
  }

  /** False when there is no room: the peer sent more than it had credits for. */
  boolean add(int bytes, byte what) {
    return add(bytes, what, 0);
  }

  /** As {@link #add(int, byte)}, written into the ring of generation {@code generation}. */
  boolean add(int bytes, byte what, int generation) {
    if (count == length.length) return false;
    int at = (head + count) % length.length;
    length[at] = bytes;
    kind[at] = what;
    ring[at] = generation;
    count++;
    return true;
  }

  int nextRing() {
    return ring[head];
  }

  int size() {
    return count;
  }

  byte nextKind() {
    return kind[head];
  }

  int nextLength() {
    return length[head];
  }

  void pop() {
    head = (head + 1) % length.length;
    count--;
  }
}
