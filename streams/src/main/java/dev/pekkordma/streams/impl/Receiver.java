package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import org.apache.pekko.util.ByteString;
import org.apache.pekko.util.ByteStringBuilder;

/**
 * The receiving half of a connection's bookkeeping: what arrived and the ring slots it sits in,
 * the credits owed to the peer for slots freed, the receives to post again, and the ByteStrings
 * the peer split into several writes, put together again. A lending receiver hands the slots
 * out in place instead ({@link LeasedRing}) and owes a credit only when a slot is released.
 */
final class Receiver {
  final Arrivals arrivals;
  private final OffHeapBuffer ringMemory;
  private final int slots;
  private final int slotSize;
  private final boolean keepBoundaries;
  private LeasedRing lent;
  private long consumed; // data messages taken: the next is in slot consumed % slots
  private int creditsOwed;
  private int receivesToPost;
  private ByteStringBuilder pieces;
  private int pieceWrites; // the writes in pieces
  /** Downstream is gone: what arrives is taken and dropped, its slots freed. */
  boolean discarding;
  long bytesReceived;
  long messagesReceived;

  Receiver(OffHeapBuffer ringMemory, int slots, int slotSize, int receives,
      boolean keepBoundaries) {
    this.arrivals = new Arrivals(receives);
    this.ringMemory = ringMemory;
    this.slots = slots;
    this.slotSize = slotSize;
    this.receivesToPost = receives;
    this.keepBoundaries = keepBoundaries;
  }

  /** Lends the ring's slots from now on. */
  void lend(LeasedRing ring) {
    lent = ring;
  }

  LeasedRing lent() {
    return lent;
  }

  /** A receive completed; it is to be posted again. */
  void received() {
    receivesToPost++;
  }

  /** The receives to post again, counted as posted. */
  int takeReceivesToPost() {
    int n = receivesToPost;
    receivesToPost = 0;
    return n;
  }

  int creditsOwed() {
    return creditsOwed;
  }

  /** The credits owed, to go back on the next message; none are owed after. */
  int takeCredits() {
    int c = creditsOwed;
    creditsOwed = 0;
    return c;
  }

  /** Slots released by the application since last asked (lending only). */
  void reclaim() {
    if (lent != null) creditsOwed += lent.reclaim();
  }

  /** A release woke us (lending only). */
  void woken() {
    creditsOwed += lent.woken();
  }

  /** Whether a ByteString is half put together. */
  boolean partial() {
    return pieces != null;
  }

  /** Data writes the application has taken whole. */
  long takenWhole() {
    return consumed - pieceWrites;
  }

  /**
   * Takes the oldest arrival, a data write (the stage takes the FIN itself): what goes
   * downstream, or null when there is nothing for it yet (a piece of a longer ByteString, or
   * discarded). Fails naming the slot when a peer wrote into a lent slot not yet released.
   */
  Object take() {
    byte kind = arrivals.nextKind();
    int length = arrivals.nextLength();
    arrivals.pop();
    int slot = (int) (consumed % slots);
    consumed++;
    bytesReceived += length;
    if (lent != null) return lendOrSkip(length, kind);
    creditsOwed++;
    if (discarding) return null;
    byte[] bytes = new byte[length];
    if (length > 0) {
      NativeMemory.copyToArray(ringMemory.address() + (long) slot * slotSize, bytes, 0, length);
    }
    // pieces are copied into the builder's one growing array: a message of many small writes
    // holds no object per write
    if (kind == Arrivals.MORE && keepBoundaries) {
      if (pieces == null) pieces = new ByteStringBuilder();
      pieces.putBytes(bytes);
      pieceWrites++;
      return null;
    }
    ByteString piece;
    if (pieces != null && keepBoundaries) {
      pieces.putBytes(bytes);
      piece = pieces.result();
      pieces = null;
      pieceWrites = 0;
    } else {
      piece = ByteString.fromArrayUnsafe(bytes);
    }
    messagesReceived++;
    return piece;
  }

  private Object lendOrSkip(int length, byte kind) {
    if (!lent.nextSlotReclaimed()) {
      throw new IllegalStateException("protocol error: the peer wrote into ring slot "
          + lent.nextSlot() + " before it was released and credited");
    }
    if (discarding) {
      lent.skip();
      creditsOwed += lent.reclaim();
      return null;
    }
    messagesReceived++;
    return lent.lend(length, kind == Arrivals.END);
  }
}
