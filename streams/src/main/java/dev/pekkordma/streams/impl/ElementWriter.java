package dev.pekkordma.streams.impl;

import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.streams.BulkChunk;
import java.nio.ByteBuffer;
import java.util.function.IntSupplier;
import org.apache.pekko.util.ByteString;

/**
 * Turns what upstream gives into writes: a ByteString into as many writes of at most a slot as
 * it needs (inline when small enough, else copied into a registered send buffer), a {@link
 * BulkChunk} into one write that it fills in a send buffer itself.
 */
final class ElementWriter {
  private final Sender sender;
  private final ConnectionResources res;
  private final int slotSize;
  private final SendBuffers buffers;
  private int ourMax; // what our side allows a write: buffer-size
  private Object current;
  private byte[] bytes;
  private int offset;
  private int length;
  long bytesSent;
  long messagesSent;

  ElementWriter(Sender sender, ConnectionResources res, int slotSize, SendBuffers buffers) {
    this.sender = sender;
    this.res = res;
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
    if (payload.length <= res.inlineMax) {
      NativeMemory.copyFromArray(payload, 0, res.scratch.address(), payload.length);
      sender.write(res.scratch.address(), payload.length, 0, imm, -1, true);
      return true;
    }
    int buffer = sender.takeBuffer();
    if (buffer < 0) return false;
    long address = buffers.address(buffer);
    NativeMemory.copyFromArray(payload, 0, address, payload.length);
    sender.write(address, payload.length, buffers.lkey(buffer), imm, buffer, false);
    return true;
  }

  /** An element as messages name it: "a 3-byte element". */
  static String describe(Object element) {
    return element instanceof ByteString bs ? bs.length() + "-byte element" : "element";
  }

  /** Whether an element is still being written. */
  boolean busy() {
    return current != null;
  }

  /** Nothing more is sent: the element in hand is dropped. */
  void drop() {
    current = null;
    bytes = null;
  }

  /** The next element, a ByteString or a BulkChunk, checked by the caller. */
  void take(Object element) {
    current = element;
    offset = 0;
    if (element instanceof ByteString bs) {
      length = bs.length();
      bytes = bs.toArrayUnsafe();
      if (length > res.inlineMax) buffers.toSend(length);
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
    while (current != null && sender.mayWrite()) {
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
        inline = n <= res.inlineMax;
        if (inline) {
          address = res.scratch.address();
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
          credits.getAsInt()), buffer, inline);
      bytesSent += n;
      offset += n;
      if (last) {
        messagesSent++;
        drop();
        return true;
      }
    }
    return false;
  }
}
