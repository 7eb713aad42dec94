package dev.pekkordma.soft;

import dev.pekkordma.verbs.WrOpcode;

/**
 * One UD datagram to a multicast group as it travels between processes, in one UDP datagram
 * to the group's IPv4 address (big-endian):
 *
 * <pre>
 *  0  magic "sMC1"          4
 *  4  origin                8   the sending process's random number: it drops its own
 * 12  MGID                 16   the group's GID, multicast (ff...) or IPv4-mapped class D
 * 28  source GID           16   the sending device's, neither zero nor multicast
 * 44  source QPN            4   below 0xFFFFFF
 * 48  Q_Key                 4
 * 52  opcode                1   SEND or SEND_WITH_IMM (ibv_wr_opcode)
 * 53  reserved              1   0
 * 54  payload length        2   at most {@link #MAX_PAYLOAD}, and exactly what follows
 * 56  immediate             4   as the sender posted it (0 for SEND)
 * 60  payload
 * </pre>
 *
 * Parsing allocates nothing: it fills a reused {@link ParsedDatagram} after every check, or throws
 * {@link MulticastViolation} naming what was wrong.
 */
final class MulticastWire {
  static final int MAGIC = 0x734d4331;
  static final int HEADER = 60;
  /** The largest payload: the largest MTU (a UD message is one packet). */
  static final int MAX_PAYLOAD = 4096;
  static final int MAX_DATAGRAM = HEADER + MAX_PAYLOAD;
  static final int MULTICAST_QPN = 0xFFFFFF;

  private MulticastWire() {}

  /** A datagram that is not one of ours, or is malformed: dropped, logged. */
  static final class MulticastViolation extends Exception {
    MulticastViolation(String message) {
      super(message, null, false, false);
    }
  }

  /** A parsed datagram's fields; the payload is {@code [HEADER, HEADER + length)} of the input. */
  static final class ParsedDatagram {
    long origin;
    final byte[] mgid = new byte[16];
    final byte[] srcGid = new byte[16];
    int srcQpn;
    int qkey;
    int opcode;
    int immediate;
    int length;
  }

  /** Writes the header for a payload of {@code length} bytes, which the caller puts after it. */
  static void writeHeader(byte[] b, long origin, byte[] mgid, byte[] srcGid, int srcQpn,
      int qkey, int opcode, int immediate, int length) {
    if (length < 0 || length > MAX_PAYLOAD) {
      throw new IllegalArgumentException("payload of " + length + " bytes");
    }
    putInt(b, 0, MAGIC);
    putInt(b, 4, (int) (origin >>> 32));
    putInt(b, 8, (int) origin);
    System.arraycopy(mgid, 0, b, 12, 16);
    System.arraycopy(srcGid, 0, b, 28, 16);
    putInt(b, 44, srcQpn);
    putInt(b, 48, qkey);
    b[52] = (byte) opcode;
    b[53] = 0;
    b[54] = (byte) (length >>> 8);
    b[55] = (byte) length;
    putInt(b, 56, immediate);
  }

  /**
   * Checks {@code b[0, n)} and fills {@code into}; throws MulticastViolation naming what is wrong.
   */
  static void parse(byte[] b, int n, ParsedDatagram into) throws MulticastViolation {
    if (b == null || n < 0 || n > b.length) throw new MulticastViolation("no datagram");
    if (n < HEADER) {
      throw new MulticastViolation(
          "a datagram of " + n + " bytes, shorter than the header (" + HEADER + ")");
    }
    int magic = getInt(b, 0);
    if (magic != MAGIC) {
      throw new MulticastViolation(
          "not a soft multicast datagram (magic 0x" + Integer.toHexString(magic) + ")");
    }
    if (!isMulticastGid(b, 12))
      throw new MulticastViolation("group GID " + hex(b, 12) + " is not multicast");
    if (isZero(b, 28) || isMulticastGid(b, 28)) {
      throw new MulticastViolation("source GID " + hex(b, 28) + " is zero or multicast");
    }
    int srcQpn = getInt(b, 44);
    if (srcQpn < 0 || srcQpn >= MULTICAST_QPN) {
      throw new MulticastViolation(
          "source QPN 0x" + Integer.toHexString(srcQpn) + " is not a QP's");
    }
    int opcode = b[52] & 0xff;
    if (opcode != WrOpcode.SEND.code && opcode != WrOpcode.SEND_WITH_IMM.code) {
      throw new MulticastViolation("opcode " + opcode + " is not SEND or SEND_WITH_IMM");
    }
    if (b[53] != 0) throw new MulticastViolation("reserved byte " + (b[53] & 0xff) + " is not 0");
    int length = ((b[54] & 0xff) << 8) | (b[55] & 0xff);
    if (length > MAX_PAYLOAD) {
      throw new MulticastViolation("a payload of " + length + " bytes, over " + MAX_PAYLOAD);
    }
    if (HEADER + length != n) {
      throw new MulticastViolation(
          "the header says " + length + " bytes of payload, the datagram has " + (n - HEADER));
    }
    into.origin = ((long) getInt(b, 4) << 32) | (getInt(b, 8) & 0xffffffffL);
    System.arraycopy(b, 12, into.mgid, 0, 16);
    System.arraycopy(b, 28, into.srcGid, 0, 16);
    into.srcQpn = srcQpn;
    into.qkey = getInt(b, 48);
    into.opcode = opcode;
    into.immediate = getInt(b, 56);
    into.length = length;
  }

  /**
   * Whether the 16 bytes at {@code at} are a multicast GID: ff... (IB and IPv6), or an
   * IPv4-mapped class D address (::ffff:224.0.0.0/4, RoCEv2's groups).
   */
  static boolean isMulticastGid(byte[] g, int at) {
    if ((g[at] & 0xff) == 0xff) return true;
    for (int i = 0; i < 10; i++) if (g[at + i] != 0) return false;
    return (g[at + 10] & 0xff) == 0xff && (g[at + 11] & 0xff) == 0xff
        && (g[at + 12] & 0xf0) == 0xe0;
  }

  private static boolean isZero(byte[] g, int at) {
    for (int i = 0; i < 16; i++) if (g[at + i] != 0) return false;
    return true;
  }

  static int getInt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8)
        | (b[at + 3] & 0xff);
  }

  static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  private static String hex(byte[] b, int at) {
    StringBuilder s = new StringBuilder(32);
    for (int i = 0; i < 16; i++) s.append(String.format("%02x", b[at + i] & 0xff));
    return s.toString();
  }
}
