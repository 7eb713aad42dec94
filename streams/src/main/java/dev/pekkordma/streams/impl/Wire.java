package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.memory.NativeMemory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The connection protocol. Each side registers a receive ring of {@code slots} slots and tells
 * the other where it is in the CM's private data ({@link Ring}: the connect request's, the
 * accept's). Data: RDMA WRITE WITH IMM of at most a slot into slot {@code n % slots} of the
 * peer's ring, {@code n} counting the writes into that ring (RC keeps them in order, so both
 * sides agree). Control: a zero-length SEND WITH IMM. Every message takes a receive; data also
 * takes a slot, which the writer holds a credit for.
 *
 * <p>A side may replace its ring (a small one while idle, a large one under load): it writes a
 * RING, a control immediate on an RDMA WRITE of {@link Ring#LENGTH} bytes into the peer's next
 * slot, describing the new ring, and from then on credits none of the old ring's slots. The peer
 * answers with a RING_ACK after its last write into the old ring, and writes into the new one
 * from its slot 0, holding a credit for each of its slots.
 *
 * <p>A side whose ring says it {@link Ring#takesBatches takes batches} may be sent a {@link #BATCH}:
 * one write of several whole ByteStrings, each a 4-byte big-endian length and its bytes, so that
 * small elements that queue up while a write is in flight go together, boundaries kept.
 *
 * <p>The immediate, 32 bits: the kind in bits 31-30 ({@link #END} the last or only write of a
 * ByteString, {@link #MORE} one that more writes continue, {@link #CONTROL}, {@link #BATCH});
 * for control the
 * code in bits 29-24 ({@link #CREDIT}, {@link #FIN}: no more data from me, {@link #FIN_ACK}: your
 * FIN and everything before it reached my application, {@link #CANCEL}: my application stopped
 * reading, what you write is dropped, {@link #RING}, {@link #RING_ACK}); in bits 23-0 of every
 * message the credits it returns: slots of the sender's ring freed since it last said; in a CANCEL's instead, how many of the
 * peer's writes the application took (modulo 2^24), so the peer can tell whether any was lost.
 *
 * <p>Nothing a peer sends is used before it is checked: its ring by {@link Ring#decode}, each
 * message by {@link ProtocolValidator}, which lists the rules; one broken fails the connection
 * naming the peer and the rule.
 */
@InternalApi
public final class Wire {
  static final int END = 0;
  static final int MORE = 1;
  static final int CONTROL = 2;
  static final int BATCH = 3;
  /** Before each ByteString in a BATCH: its length. */
  static final int BATCH_HEADER = 4;
  /** A ring's flag: its side takes BATCH writes. */
  static final int TAKES_BATCHES = 1;
  static final int CREDIT = 0;
  static final int FIN = 1;
  static final int FIN_ACK = 2;
  static final int CANCEL = 3;
  static final int RING = 4;
  static final int RING_ACK = 5;
  static final int CREDIT_MASK = 0xFFFFFF;
  /** A MORE write carries at least this much (or a whole slot, if slots are smaller). */
  static final int MIN_PIECE = 4096;

  static final int MAGIC = 0x50525354; // "PRST"
  static final byte VERSION = 4; // 2: CANCEL; 3: RING, RING_ACK; 4: BATCH, a ring's flags
  private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  private Wire() {}

  static int data(int kind, int credits) {
    return (kind << 30) | (credits & CREDIT_MASK);
  }

  static int control(int code, int credits) {
    return (CONTROL << 30) | (code << 24) | (credits & CREDIT_MASK);
  }

  static int kind(int imm) {
    return imm >>> 30;
  }

  static int code(int imm) {
    return (imm >>> 24) & 0x3F;
  }

  static int credits(int imm) {
    return imm & CREDIT_MASK;
  }

  /** A BATCH element's length, big-endian at {@code address}. */
  static int batchLength(long address) {
    int raw = NativeMemory.getInt(address);
    return LITTLE_ENDIAN ? Integer.reverseBytes(raw) : raw;
  }

  static void putBatchLength(long address, int length) {
    NativeMemory.putInt(address, LITTLE_ENDIAN ? Integer.reverseBytes(length) : length);
  }

  /**
   * Where a side's receive ring is, as its CM private data says: magic, version, flags (a byte:
   * {@link #TAKES_BATCHES} or nothing), two reserved bytes (zero), address, rkey, slots, slot
   * size, big-endian; zeros may follow (the IB CM pads).
   * A ring is at most {@link #MAX_SLOTS} slots of at most {@link #MAX_SLOT_SIZE} bytes (the
   * ranges of receive-buffers and buffer-size), at most {@link #MAX_BYTES} in all (one
   * registered buffer, as every side makes it), and does not wrap the address space.
   */
  record Ring(long address, int rkey, int slots, int slotSize, int flags) {
    static final int LENGTH = 28;

    Ring(long address, int rkey, int slots, int slotSize) {
      this(address, rkey, slots, slotSize, 0);
    }

    boolean takesBatches() {
      return (flags & TAKES_BATCHES) != 0;
    }
    static final int MAX_SLOTS = 1 << 16;
    static final int MAX_SLOT_SIZE = 1 << 30;
    static final long MAX_BYTES = Integer.MAX_VALUE;

    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(LENGTH).order(ByteOrder.BIG_ENDIAN);
      b.putInt(MAGIC).put(VERSION).put((byte) flags).putShort((short) 0)
          .putLong(address).putInt(rkey).putInt(slots).putInt(slotSize);
      return b.array();
    }

    /** The ring in a peer's private data; fails saying what is wrong with it. */
    static Ring decode(byte[] data) {
      if (data == null || data.length < LENGTH) {
        throw new IllegalArgumentException("expected " + LENGTH
            + " bytes of private data describing its receive ring, got "
            + (data == null ? 0 : data.length) + " (is the peer a pekko-rdma stream?)");
      }
      ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
      int magic = b.getInt();
      if (magic != MAGIC) {
        throw new IllegalArgumentException("bad magic 0x" + Integer.toHexString(magic)
            + " in the private data (is the peer a pekko-rdma stream?)");
      }
      byte version = b.get();
      if (version != VERSION) {
        throw new IllegalArgumentException("the peer speaks protocol version " + version
            + ", this side " + VERSION);
      }
      int flags = b.get() & 0xFF;
      if ((flags & ~TAKES_BATCHES) != 0) {
        throw new IllegalArgumentException("the flags byte 5 of its private data is 0x"
            + Integer.toHexString(flags) + ": bits this side does not know are set");
      }
      int reserved = b.getShort() & 0xFFFF;
      if (reserved != 0) {
        throw new IllegalArgumentException("the reserved bytes 6-7 of its private data are 0x"
            + Integer.toHexString(reserved) + ", not zero");
      }
      Ring r = new Ring(b.getLong(), b.getInt(), b.getInt(), b.getInt(), flags);
      for (int i = LENGTH; i < data.length; i++) {
        if (data[i] != 0) {
          throw new IllegalArgumentException("byte " + i + " of its private data, after the ring,"
              + " is 0x" + Integer.toHexString(data[i] & 0xFF) + ": only zeros may follow it");
        }
      }
      r.check();
      return r;
    }

    private void check() {
      if (slots < 1 || slots > MAX_SLOTS) {
        throw new IllegalArgumentException("its receive ring has " + slots + " slots, not in [1, "
            + MAX_SLOTS + "] (the range of receive-buffers): " + this);
      }
      if (slotSize < 1 || slotSize > MAX_SLOT_SIZE) {
        throw new IllegalArgumentException("its receive ring's slot size is " + slotSize
            + ", not in [1, " + MAX_SLOT_SIZE + "] (the range of buffer-size): " + this);
      }
      long bytes = (long) slots * slotSize;
      if (bytes > MAX_BYTES) {
        throw new IllegalArgumentException("its receive ring of " + bytes + " bytes (" + slots
            + " slots x " + slotSize + ") is larger than one registration may be (" + MAX_BYTES
            + " bytes): " + this);
      }
      if (Long.compareUnsigned(address, -bytes) > 0) {
        throw new IllegalArgumentException("its receive ring at 0x" + Long.toHexString(address)
            + " of " + bytes + " bytes wraps around the end of the address space: " + this);
      }
    }
  }
}
