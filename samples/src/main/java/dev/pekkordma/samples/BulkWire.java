package dev.pekkordma.samples;

import dev.pekkordma.cm.ConnectionParameters;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The bulk-transfer protocol's messages, big-endian.
 *
 * <ul>
 *   <li>{@link TransferPlan} in the connect request's private data (at most 56 bytes): what
 *       the client will send.
 *   <li>{@link RingInfo} in the accept's private data (at most 196 bytes): where the server's
 *       ring is and how many slots it has; the client starts with that many credits.
 *   <li>A reject's private data: a reason the client prints.
 *   <li>Data: one message per chunk (RDMA WRITE WITH IMM into slot {@code seq % slots}, or SEND
 *       WITH IMM), immediate = {@code seq} modulo 2^31.
 *   <li>Credits: a zero-length SEND WITH IMM from server to client, immediate = chunks the
 *       server has consumed and re-armed so far (modulo 2^32).
 *   <li>{@link Fin}: a SEND WITH IMM (immediate {@link #FIN_IMM}) after the last chunk, carrying
 *       the client's count and CRC32C; it takes a credit like a chunk.
 *   <li>{@link Verdict}: a SEND from the server with its count, CRC32C and judgement.
 * </ul>
 */
public final class BulkWire {
  public static final int MAGIC = 0x50524254; // "PRBT"
  public static final byte VERSION = 1;
  /** The immediate of the FIN message; data immediates are below 2^31. */
  public static final int FIN_IMM = 0xFFFFFFFF;
  public static final int SEQ_MASK = 0x7FFFFFFF;
  /** Bytes every control message (FIN, verdict) fits in. */
  public static final int CONTROL_SIZE = 64;

  private BulkWire() {}

  private static ByteBuffer read(byte[] data, int minLength, String what) {
    if (data == null || data.length < minLength) {
      throw new ProtocolException(what + ": expected at least " + minLength + " bytes, got "
          + (data == null ? 0 : data.length) + " (is the peer a bulk-transfer " + (
          what.startsWith("connect") ? "client" : "server") + "?)");
    }
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
    int magic = b.getInt();
    if (magic != MAGIC) {
      throw new ProtocolException(what + ": bad magic 0x" + Integer.toHexString(magic)
          + " (is the peer a bulk-transfer program?)");
    }
    return b;
  }

  /** The client's announcement. */
  public record TransferPlan(TransferMode mode, long totalBytes, int chunkSize, int depth,
      long seed) {
    static final int LENGTH = 32;

    public byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(LENGTH).order(ByteOrder.BIG_ENDIAN);
      b.putInt(MAGIC).put(VERSION).put((byte) mode.ordinal()).putShort((short) 0)
          .putLong(totalBytes).putInt(chunkSize).putInt(depth).putLong(seed);
      return b.array();
    }

    public static TransferPlan decode(byte[] data) {
      ByteBuffer b = read(data, LENGTH, "connect request private data");
      byte version = b.get();
      if (version != VERSION) {
        throw new ProtocolException("client speaks protocol version " + version + ", this server "
            + VERSION);
      }
      int mode = b.get();
      if (mode < 0 || mode >= TransferMode.values().length) {
        throw new ProtocolException("unknown transfer mode " + mode);
      }
      b.getShort();
      TransferPlan h = new TransferPlan(TransferMode.values()[mode], b.getLong(), b.getInt(),
          b.getInt(), b.getLong());
      if (h.totalBytes <= 0 || h.chunkSize <= 0 || h.depth <= 0) {
        throw new ProtocolException("nonsense request: " + h);
      }
      return h;
    }

    public long chunks() {
      return (totalBytes + chunkSize - 1) / chunkSize;
    }

    /** The length of chunk {@code seq}: the chunk size, except perhaps for the last. */
    public int chunkLength(long seq) {
      long left = totalBytes - seq * chunkSize;
      return (int) Math.min(chunkSize, left);
    }
  }

  /** The server's ring. */
  public record RingInfo(long address, int rkey, int slots, int slotSize) {
    static final int LENGTH = 28;

    public byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(LENGTH).order(ByteOrder.BIG_ENDIAN);
      b.putInt(MAGIC).put(VERSION).put((byte) 0).putShort((short) 0)
          .putLong(address).putInt(rkey).putInt(slots).putInt(slotSize);
      return b.array();
    }

    public static RingInfo decode(byte[] data) {
      ByteBuffer b = read(data, LENGTH, "accept private data");
      b.getInt();
      RingInfo r = new RingInfo(b.getLong(), b.getInt(), b.getInt(), b.getInt());
      if (r.slots <= 0 || r.slotSize <= 0) throw new ProtocolException("nonsense ring: " + r);
      return r;
    }
  }

  /** A reject's private data: the magic and a UTF-8 reason. */
  public static byte[] encodeReject(String reason) {
    byte[] text = reason.getBytes(StandardCharsets.UTF_8);
    int n = Math.min(text.length, ConnectionParameters.MAX_REJECT_PRIVATE_DATA - 6);
    ByteBuffer b = ByteBuffer.allocate(6 + n).order(ByteOrder.BIG_ENDIAN);
    b.putInt(MAGIC).putShort((short) n).put(text, 0, n);
    return b.array();
  }

  /** The reason in a reject's private data, or null when it is not ours. */
  public static String decodeReject(byte[] data) {
    if (data == null || data.length < 6) return null;
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
    if (b.getInt() != MAGIC) return null;
    int n = b.getShort() & 0xffff;
    if (n > b.remaining()) return null;
    return new String(data, 6, n, StandardCharsets.UTF_8);
  }

  /** The client's end of data: what it sent. */
  public record Fin(long bytes, long chunks, int crc) {
    static final int LENGTH = 24;

    public void encode(ByteBuffer into) {
      into.clear();
      into.order(ByteOrder.BIG_ENDIAN).putInt(MAGIC).putInt(crc).putLong(bytes).putLong(chunks);
    }

    public static Fin decode(ByteBuffer from, int length) {
      byte[] data = new byte[Math.min(length, CONTROL_SIZE)];
      from.duplicate().clear().get(data);
      ByteBuffer b = read(data, LENGTH, "FIN message");
      int crc = b.getInt();
      return new Fin(b.getLong(), b.getLong(), crc);
    }
  }

  /** The server's judgement of what it received. */
  public record Verdict(boolean ok, long bytes, long chunks, int crc) {
    static final int LENGTH = 28;

    public void encode(ByteBuffer into) {
      into.clear();
      into.order(ByteOrder.BIG_ENDIAN).putInt(MAGIC).putInt(ok ? 0 : 1).putInt(crc).putLong(bytes)
          .putLong(chunks);
    }

    public static Verdict decode(ByteBuffer from, int length) {
      byte[] data = new byte[Math.min(length, CONTROL_SIZE)];
      from.duplicate().clear().get(data, 0, data.length);
      ByteBuffer b = read(data, LENGTH, "verdict message");
      boolean ok = b.getInt() == 0;
      int crc = b.getInt();
      return new Verdict(ok, b.getLong(), b.getLong(), crc);
    }
  }

  /** The peer broke the protocol. */
  public static final class ProtocolException extends RuntimeException {
    public ProtocolException(String message) {
      super(message);
    }
  }
}
