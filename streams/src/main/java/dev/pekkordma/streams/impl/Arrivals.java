package dev.pekkordma.streams.impl;

/**
 * What arrived, in order, until downstream takes it: each data write's length and whether more
 * writes continue its ByteString, and the peer's FIN. As many as receives are posted, which the
 * peer's credits bound: one more is the peer writing without a credit.
 */
final class Arrivals {
  static final byte END = 0;
  static final byte MORE = 1;
  static final byte FIN = 2;

  private final int[] length;
  private final byte[] kind;
  private int head;
  private int count;

  Arrivals(int capacity) {
    length = new int[capacity];
    kind = new byte[capacity];
  }

  /** False when there is no room: the peer sent more than it had credits for. */
  boolean add(int bytes, byte what) {
    if (count == length.length) return false;
    int at = (head + count) % length.length;
    length[at] = bytes;
    kind[at] = what;
    count++;
    return true;
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
