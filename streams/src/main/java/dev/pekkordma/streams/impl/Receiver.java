package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import java.util.function.Consumer;
import org.apache.pekko.util.ByteString;
import org.apache.pekko.util.ByteStringBuilder;

/**
 * The receiving half of a connection's bookkeeping: what arrived and the ring slots it sits in,
 * the credits owed to the peer for slots freed, the receives to post again, and the ByteStrings
 * the peer split into several writes, put together again. A lending receiver hands the slots
 * out in place instead ({@link LeasedRing}) and owes a credit only when a slot is released.
 *
 * <p>The ring may be replaced ({@link #announce}): from then on the old ring's slots are credited
 * no more; the peer's RING_ACK ({@link #peerAcked}) says where its writes go next, and once the
 * last write into the old ring is taken, the old ring is retired and the new one read.
 */
final class Receiver {
  /** A ring of slots in memory. */
  record Slots(OffHeapBuffer memory, int count, int size) {
    long address(long slot) {
      return memory.address() + slot * size;
    }
  }

  final ArrivedWrites arrivals;
  private final Consumer<Slots> retired;
  private final boolean keepBoundaries;
  private Slots ring; // where takes read
  private int ringGen;
  private Slots next; // announced to the peer
  private Slots writerRing; // where the peer writes now
  private int writerGen;
  private long writerArrived; // writes into writerRing so far
  private boolean crediting = true; // false once the ring is replaced
  private LeasedRing lent;
  private long consumed; // writes taken from the ring: the next is in slot consumed % count
  private long taken; // writes taken from every ring
  private int creditsOwed;
  private int receivesToPost;
  private ByteStringBuilder pieces;
  private int pieceWrites; // the writes in pieces
  private int batchAt; // where the next ByteString of the oldest arrival, a BATCH, begins
  private long maxMessage = Long.MAX_VALUE;
  private String maxMessageSetting;
  /** Downstream is gone: what arrives is taken and dropped, its slots freed. */
  boolean discarding;
  /** What came: bytes and ByteStrings (or leases). */
  final Traffic received = new Traffic();

  Receiver(OffHeapBuffer ringMemory, int slots, int slotSize, int receives,
      boolean keepBoundaries) {
    this(new Slots(ringMemory, slots, slotSize), receives, keepBoundaries, r -> { });
  }

  /** Reads {@code ring}; a ring replaced goes to {@code retired} once its last write is taken. */
  Receiver(Slots ring, int receives, boolean keepBoundaries, Consumer<Slots> retired) {
    this.arrivals = new ArrivedWrites(receives);
    this.ring = ring;
    this.writerRing = ring;
    this.retired = retired;
    this.receivesToPost = receives;
    this.keepBoundaries = keepBoundaries;
  }

  /**
   * A write ({@link ArrivedWrites#END}, {@link ArrivedWrites#MORE}, or the peer's RING as
   * {@link ArrivedWrites#SKIP}) came into the peer's current ring: the address of its slot, or -1
   * when the peer wrote more than it had credits for.
   */
  long arrived(int length, byte kind) {
    if (!arrivals.add(length, kind, writerGen)) return -1;
    return writerRing.address(writerArrived++ % writerRing.count());
  }

  /** The peer's FIN came. False: the peer sent more than it had credits for. */
  boolean finArrived() {
    return arrivals.add(0, ArrivedWrites.FIN, writerGen);
  }

  /** A ByteString in a BATCH is at most {@code bytes} long ({@code setting}). */
  void maxMessage(long bytes, String setting) {
    maxMessage = bytes;
    maxMessageSetting = setting;
  }

  /** We told the peer of {@code next}: no slot of the current ring is credited from now on. */
  void announce(Slots next) {
    this.next = next;
    crediting = false;
    creditsOwed = 0;
  }

  /** Whether a ring announced is still to be acknowledged or reached. */
  boolean replacing() {
    return next != null;
  }

  /** The peer acknowledged our RING: what it writes from now on goes into the new ring. */
  void peerAcked() {
    writerRing = next;
    writerGen = ringGen + 1;
    writerArrived = 0;
    retireIfDone();
  }

  /** The ring the takes read. */
  Slots ring() {
    return ring;
  }

  /** The ring the peer writes into now. */
  Slots writerRing() {
    return writerRing;
  }

  /** Writes taken from every ring. */
  long taken() {
    return taken;
  }

  /** Credits worth a CREDIT message of their own: a quarter of the ring. */
  int creditThreshold() {
    return Math.max(1, (ring.count() + 3) / 4);
  }

  private void retireIfDone() {
    if (next == null || writerGen == ringGen) return;
    if (arrivals.size() > 0 && arrivals.nextRing() == ringGen) return; // old writes remain
    retired.accept(ring);
    ring = next;
    ringGen = writerGen;
    next = null;
    consumed = 0;
    crediting = true;
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

  /** Writes the application has taken whole (the peer's RINGs count as taken). */
  long takenWhole() {
    return taken - pieceWrites;
  }

  /**
   * Takes the oldest arrival, a data write (the stage takes the FIN itself): what goes
   * downstream, or null when there is nothing for it yet (a piece of a longer ByteString, or
   * discarded). Fails naming the slot when a peer wrote into a lent slot not yet released.
   */
  Object take() {
    retireIfDone();
    byte kind = arrivals.nextKind();
    int length = arrivals.nextLength();
    if (kind == ArrivedWrites.BATCH && !discarding) {
      Object element = takeFromBatch(ring.address(consumed % ring.count()), length);
      if (batchAt < length) return element;
      batchAt = 0; // its last: the write is taken, as any other
      arrivals.pop();
      consumed++;
      taken++;
      if (crediting) creditsOwed++;
      retireIfDone();
      return element;
    }
    arrivals.pop();
    long slot = consumed % ring.count();
    consumed++;
    taken++;
    try {
      if (kind == ArrivedWrites.SKIP) { // the peer's RING: its slot, nothing for downstream
        if (lent != null) {
          lendOrSkip(0, kind);
        } else if (crediting) {
          creditsOwed++;
        }
        return null;
      }
      if (kind == ArrivedWrites.BATCH) { // discarding: the rest of it goes at once
        batchAt = 0;
        received.addBytes(length);
        if (crediting) creditsOwed++;
        return null;
      }
      return takeData(slot, length, kind);
    } finally {
      retireIfDone();
    }
  }

  /**
   * The next ByteString of the BATCH of {@code length} bytes at {@code base}. Its length is read
   * from memory the peer can still write to, so it is checked here, where it is used: it must
   * fit in what is left of the write, and within max-message-size.
   */
  private ByteString takeFromBatch(long base, int length) {
    int left = length - batchAt - Wire.BATCH_HEADER;
    if (left < 0) {
      throw new IllegalStateException("protocol error: a BATCH write of " + length
          + " bytes ends " + (length - batchAt) + " bytes after its last ByteString: too few for"
          + " another's " + Wire.BATCH_HEADER + "-byte length");
    }
    int n = Wire.batchLength(base + batchAt);
    if (n < 0 || n > left) {
      throw new IllegalStateException("protocol error: a ByteString in a BATCH write of "
          + length + " bytes, at byte " + batchAt + ", says it is " + Integer.toUnsignedString(n)
          + " bytes long, and only " + left + " follow");
    }
    if (n > maxMessage) {
      throw new IllegalStateException("protocol error: a message of more than " + maxMessage
          + " bytes (" + maxMessageSetting + ")");
    }
    byte[] bytes = new byte[n];
    if (n > 0) NativeMemory.copyToArray(base + batchAt + Wire.BATCH_HEADER, bytes, 0, n);
    batchAt += Wire.BATCH_HEADER + n;
    received.addBytes(n);
    received.addMessages(1);
    return ByteString.fromArrayUnsafe(bytes);
  }

  private Object takeData(long slot, int length, byte kind) {
    received.addBytes(length);
    if (lent != null) return lendOrSkip(length, kind);
    if (crediting) creditsOwed++;
    if (discarding) return null;
    byte[] bytes = new byte[length];
    if (length > 0) NativeMemory.copyToArray(ring.address(slot), bytes, 0, length);
    // pieces are copied into the builder's one growing array: a message of many small writes
    // holds no object per write
    if (kind == ArrivedWrites.MORE && keepBoundaries) {
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
    received.addMessages(1);
    return piece;
  }

  private Object lendOrSkip(int length, byte kind) {
    if (!lent.nextSlotReclaimed()) {
      throw new IllegalStateException("protocol error: the peer wrote into ring slot "
          + lent.nextSlot() + " before it was released and credited");
    }
    if (discarding || kind == ArrivedWrites.SKIP) {
      lent.skip();
      creditsOwed += lent.reclaim();
      return null;
    }
    received.addMessages(1);
    return lent.lend(length, kind == ArrivedWrites.END);
  }
}
