package dev.pekkordma.streams.impl;

import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.streams.BulkChunk;
import java.nio.ByteBuffer;
import java.util.function.IntSupplier;
import org.apache.pekko.util.ByteString;

/**
 * Turns what upstream gives into writes: a ByteString into as many writes of at most a slot as
 * it needs (inline when small enough, else copied into a registered send buffer), a {@link
 * BulkChunk} into one write that it fills in a send buffer itself.
 *
 * <p>Coalescing (coalesce-writes, when the peer takes BATCH writes): a small ByteString that
 * finds the peer caught up (every write of ours taken and credited back: a ping-pong, or the
 * first after a pause) goes at once; one that finds writes of ours still with the peer, or
 * follows one in the same burst of events, is copied into a {@link Batch}, which goes as one
 * write once the burst is over ({@link #burstOver}, which the stage hears of after everything
 * that was ready has been handled) and the batch before it has completed (as Tcp's coalescing
 * waits for the write in flight), when it is full, before a larger element, or when the
 * stream ends. A stream under way then costs a write, a receive and a wake-up per burst
 * instead of per element, and a lone element waits for nothing.
 */
final class ElementWriter {
  private final Sender sender;
  private final int inlineMax; // the most a write carries inline
  // where inline writes are put together: its address is asked for at each write, so that a
  // write after the connection's memory is freed fails instead of writing into it
  private final OffHeapBuffer scratch;
  private final int slotSize;
  private final SendBuffers buffers;
  private int ourMax; // what our side allows a write: buffer-size
  private final boolean coalesce;
  private final Batch batch = new Batch();
  private boolean opened; // a burst began since the last burstBegan()
  private boolean inBurst; // something was written in this burst: small elements gather
  private long batchInFlight = -1; // the wr_id of the last batch posted, until it completes
  private Object current;
  private byte[] bytes;
  private int offset;
  private int length;
  /** What went: bytes and ByteStrings (or chunks). */
  final Traffic sent = new Traffic();

  ElementWriter(Sender sender, int inlineMax, OffHeapBuffer scratch, int slotSize,
      SendBuffers buffers, boolean coalesce) {
    this.coalesce = coalesce;
    this.sender = sender;
    this.inlineMax = inlineMax;
    this.scratch = scratch;
    this.slotSize = slotSize;
    this.buffers = buffers;
    this.ourMax = slotSize;
  }

  /** The most one write carries: our send buffers and the peer's slots, whichever smaller. */
  int writeMax() {
    return Math.min(Math.min(ourMax, buffers.size()), sender.peerSlotSize());
  }

  /**
   * Why a ByteString of {@code length} bytes cannot go under {@code settings} (longer than a
   * write, and oversize-chunks = fail), or null.
   */
  String oversize(int length, RdmaStreamSettings settings) {
    int writeMax = Math.min(ourMax, sender.peerSlotSize()); // what a write may carry at most
    if (length <= writeMax || settings.oversize() != RdmaStreamSettings.Oversize.FAIL) {
      return null;
    }
    return "a ByteString of " + length + " bytes is larger than " + settings.path()
        + ".buffer-size (" + writeMax + " bytes" + (writeMax < slotSize ? ", the peer's" : "")
        + "); raise it, or set " + settings.path() + ".oversize-chunks = split";
  }

  /**
   * Writes {@code payload} (a RING) into the peer's next slot with {@code imm}, inline or from a
   * send buffer; false when it cannot go now (no credit, no buffer).
   */
  boolean writeRing(byte[] payload, int imm) {
    if (!sender.mayWrite()) return false;
    if (payload.length <= inlineMax) {
      long at = scratch.address();
      NativeMemory.copyFromArray(payload, 0, at, payload.length);
      sender.write(at, payload.length, 0, imm, -1, Sender.WriteSource.INLINE);
      return true;
    }
    int buffer = sender.takeBuffer();
    if (buffer < 0) return false;
    long address = buffers.address(buffer);
    NativeMemory.copyFromArray(payload, 0, address, payload.length);
    sender.write(address, payload.length, buffers.lkey(buffer), imm, buffer,
        Sender.WriteSource.SEND_BUFFER);
    return true;
  }

  /** An element as messages name it: "a 3-byte element". */
  static String describe(Object element) {
    return element instanceof ByteString bs ? bs.length() + "-byte element" : "element";
  }

  /** Whether an element is still being written, or waits in a batch. */
  boolean busy() {
    return current != null || batch.open();
  }

  /** Whether an element is in hand, not yet all written or gathered. */
  boolean holding() {
    return current != null;
  }

  /** The element in hand is done with. */
  private void drop() {
    current = null;
    bytes = null;
  }

  /** Nothing more can reach the peer: the element in hand and what gathered are dropped. */
  void abandon() {
    drop();
    if (batch.open()) sender.giveBack(batch.abandon());
  }

  /** The next element, a ByteString or a BulkChunk, checked by the caller. */
  void take(Object element) {
    current = element;
    offset = 0;
    if (element instanceof ByteString bs) {
      length = bs.length();
      bytes = bs.toArrayUnsafe();
      if (length > inlineMax) buffers.toSend(length);
    } else {
      length = -1;
      bytes = null;
    }
  }

  /**
   * Writes as much of the element as credits, send buffers and the send queue allow, each
   * write carrying the credits {@code credits} hands over; true when the element is all
   * written. A failed post ({@link Sender.PostFailed}) or a chunk that fails to fill its buffer
   * throws.
   */
  boolean writeSome(IntSupplier credits) {
    while (current != null) {
      if (current instanceof ByteString && gathers(length)) {
        if (batch.open() && !batch.fits(length)) {
          buffers.toSend(batch.needs(length)); // busy: larger buffers, if they can be had
          if (!flush(credits)) return false;
        }
        if (batch.open() || inBurst || !sender.peerCaughtUp()) return gather();
      }
      if (!flush(credits) || !sender.mayWrite()) return false; // what gathered goes first
      int writeMax = writeMax();
      int n;
      boolean last;
      int buffer = -1;
      long address;
      int lkey;
      boolean inline;
      if (current instanceof BulkChunk chunk) {
        buffer = sender.takeBuffer();
        if (buffer < 0) return false;
        ByteBuffer view = buffers.view(buffer);
        view.clear().limit(writeMax);
        try {
          chunk.writeTo(view);
        } catch (RuntimeException e) {
          sender.giveBack(buffer);
          throw e;
        }
        n = view.position();
        last = true;
        inline = false;
        address = buffers.address(buffer);
        lkey = buffers.lkey(buffer);
      } else {
        n = Math.min(length - offset, writeMax);
        last = offset + n == length;
        inline = n <= inlineMax;
        if (inline) {
          address = scratch.address();
          lkey = 0;
        } else {
          buffer = sender.takeBuffer();
          if (buffer < 0) return false;
          address = buffers.address(buffer);
          lkey = buffers.lkey(buffer);
        }
        if (n > 0) NativeMemory.copyFromArray(bytes, offset, address, n);
      }
      sender.write(address, n, lkey, Wire.data(last ? Wire.END : Wire.MORE,
          credits.getAsInt()), buffer,
          inline ? Sender.WriteSource.INLINE : Sender.WriteSource.SEND_BUFFER);
      sent.addBytes(n);
      offset += n;
      if (last) {
        // after a burst's first small one, the rest of the burst gathers
        if (current instanceof ByteString && gathers(length)) opened = inBurst = true;
        sent.addMessages(1);
        drop();
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a ByteString of {@code n} bytes is gathered: at most a quarter of a batch, so that
   * gathering pays. A batch is at most the peer's first slot, which no ring of an honest peer's
   * undercuts, so that it still fits when the peer has replaced its ring meanwhile.
   */
  private boolean gathers(int n) {
    return coalescing() && n <= batchLimit() / 4;
  }

  private boolean coalescing() {
    return coalesce && sender.peerTakesBatches();
  }

  private int batchLimit() {
    return Math.min(writeMax(), sender.peerFirstSlotSize());
  }

  /** Copies the element in hand into the batch, opening one if none is; false: no buffer. */
  private boolean gather() {
    if (!batch.open()) {
      int b = sender.takeBuffer();
      if (b < 0) return false;
      batch.start(b, buffers.address(b), batchLimit());
      opened = inBurst = true; // its burst's end sends it
    }
    batch.add(bytes, length);
    sent.addBytes(length);
    sent.addMessages(1);
    drop();
    return true;
  }

  /** Whether a burst began since last asked: its end is to be told ({@link #burstOver}). */
  boolean burstBegan() {
    boolean o = opened;
    opened = false;
    return o;
  }

  /** The burst of events that began with {@link #burstBegan} is over: a batch goes once it can. */
  void burstOver() {
    inBurst = false;
  }

  /**
   * Sends what gathered once its burst is over and the batch before it has completed, or {@code
   * now}, if a write may go.
   */
  void flushIfDue(IntSupplier credits, boolean now) {
    if (now || (batch.open() && !inBurst && !batchInFlight())) flush(credits);
  }

  private boolean batchInFlight() {
    if (batchInFlight >= 0 && sender.completedUpTo(batchInFlight)) batchInFlight = -1;
    return batchInFlight >= 0;
  }

  /** Posts the batch, if one is open; true when none is left, false: no credit or SQ room. */
  private boolean flush(IntSupplier credits) {
    if (!batch.open()) return true;
    if (!sender.mayWrite()) return false;
    if (batch.bytes() > sender.peerSlotSize()) {
      throw new Sender.PostFailed("protocol error: the peer's ring has " + sender.peerSlotSize()
          + "-byte slots, smaller than its first ring's (" + sender.peerFirstSlotSize()
          + "), which " + batch.bytes() + " bytes of small messages were gathered for");
    }
    batch.post(sender, buffers.lkey(batch.buffer()), credits.getAsInt());
    batchInFlight = sender.lastWrId();
    return true;
  }
}
