package dev.pekkordma.streams;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The streams protocol as a foreign peer writes it, from Wire's documentation and not its code:
 * the ring advertised in the CM's private data and the 32-bit immediates. Anything can be
 * encoded, the absurd included.
 */
final class HostileWire {
  static final int MAGIC = 0x50525354; // "PRST"
  static final byte VERSION = 4;
  static final int RING_LENGTH = 28;

  static final int END = 0;
  static final int MORE = 1;
  static final int CONTROL = 2;
  static final int BATCH = 3;
  static final int CREDIT = 0;
  static final int FIN = 1;
  static final int FIN_ACK = 2;
  static final int CANCEL = 3;
  static final int RING = 4;
  static final int RING_ACK = 5;

  private HostileWire() {}

  /** A ring as a peer advertises it: magic, version, 3 reserved bytes, address, rkey, slots, size. */
  record Ring(long address, int rkey, int slots, int slotSize) {
    byte[] encode() {
      return ring(MAGIC, VERSION, address, rkey, slots, slotSize);
    }

    long length() {
      return (long) slots * slotSize;
    }

    /** Whether {@code [at, at+len)} lies in this ring. */
    boolean covers(long at, long len) {
      return Long.compareUnsigned(at, address) >= 0 && len >= 0
          && Long.compareUnsigned(at - address, length()) <= 0
          && len <= length() - (at - address);
    }

    static Ring decode(byte[] data) {
      ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
      if (data.length < RING_LENGTH || b.getInt() != MAGIC) {
        throw new AssertionError("not a ring: " + data.length + " bytes");
      }
      b.position(8);
      return new Ring(b.getLong(), b.getInt(), b.getInt(), b.getInt());
    }
  }

  static byte[] ring(int magic, byte version, long address, int rkey, int slots, int slotSize) {
    return ByteBuffer.allocate(RING_LENGTH).order(ByteOrder.BIG_ENDIAN).putInt(magic)
        .put(version).put((byte) 0).putShort((short) 0).putLong(address).putInt(rkey)
        .putInt(slots).putInt(slotSize).array();
  }

  /** A BATCH write's bytes: each element's length, 4 bytes big-endian, then the element. */
  static byte[] batch(byte[]... elements) {
    int total = 0;
    for (byte[] e : elements) total += 4 + e.length;
    ByteBuffer b = ByteBuffer.allocate(total).order(ByteOrder.BIG_ENDIAN);
    for (byte[] e : elements) b.putInt(e.length).put(e);
    return b.array();
  }

  static int data(int kind, int credits) {
    return (kind << 30) | (credits & 0xFFFFFF);
  }

  static int control(int code, int field) {
    return (CONTROL << 30) | ((code & 0x3F) << 24) | (field & 0xFFFFFF);
  }

  static int kind(int imm) {
    return imm >>> 30;
  }

  static int code(int imm) {
    return (imm >>> 24) & 0x3F;
  }

  static int credits(int imm) {
    return imm & 0xFFFFFF;
  }
}
