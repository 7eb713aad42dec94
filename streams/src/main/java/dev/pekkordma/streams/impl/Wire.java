package dev.pekkordma.streams.impl;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The connection protocol. Each side registers a receive ring of {@code slots} slots and tells
 * the other where it is in the CM's private data ({@link Ring}: the connect request's, the
 * accept's). Data: RDMA WRITE WITH IMM of at most a slot into slot {@code n % slots} of the
 * peer's ring, {@code n} counting the writes (RC keeps them in order, so both sides agree).
 * Control: a zero-length SEND WITH IMM. Every message takes a receive; data also takes a slot,
 * which the writer holds a credit for.
 *
 * <p>The immediate, 32 bits: the kind in bits 31-30 ({@link #END} the last or only write of a
 * ByteString, {@link #MORE} one that more writes continue, {@link #CONTROL}); for control the
 * code in bits 29-24 ({@link #CREDIT}, {@link #FIN}: no more data from me, {@link #FIN_ACK}: your
 * FIN and everything before it reached my application, {@link #CANCEL}: my application stopped
 * reading, what you write is dropped); in bits 23-0 of every message the credits it returns:
 * slots of the sender's ring freed since it last said; in a CANCEL's instead, how many of the
 * peer's writes the application took (modulo 2^24), so the peer can tell whether any was lost.
 */
public final class Wire {
  static final int END = 0;
  static final int MORE = 1;
  static final int CONTROL = 2;
  static final int CREDIT = 0;
  static final int FIN = 1;
  static final int FIN_ACK = 2;
  static final int CANCEL = 3;
  static final int CREDIT_MASK = 0xFFFFFF;

  static final int MAGIC = 0x50525354; // "PRST"
  static final byte VERSION = 2; // 2: CANCEL

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

  /** Where a side's receive ring is. */
  record Ring(long address, int rkey, int slots, int slotSize) {
    static final int LENGTH = 28;

    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(LENGTH).order(ByteOrder.BIG_ENDIAN);
      b.putInt(MAGIC).put(VERSION).put((byte) 0).putShort((short) 0)
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
      b.get();
      b.getShort();
      Ring r = new Ring(b.getLong(), b.getInt(), b.getInt(), b.getInt());
      if (r.slots < 1 || r.slotSize < 1) {
        throw new IllegalArgumentException("nonsense receive ring " + r);
      }
      return r;
    }
  }
}
