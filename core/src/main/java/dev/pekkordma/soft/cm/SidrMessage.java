package dev.pekkordma.soft.cm;

import dev.pekkordma.verbs.Gid;
import java.net.ProtocolException;

/**
 * One message of the soft CM's SIDR exchange (the IB CM's SIDR_REQ and SIDR_REP), which an
 * RDMA_PS_UDP id's connect is: one UDP datagram each way, between the requester's UDP port and
 * the listener's (big-endian):
 *
 * <pre>
 * magic "sCMU" (4), kind (1: REQ 1, REP 2), request id (4), then
 *   REQ: requester's GID (16), private data length (1), private data (at most 180)
 *   REP: status (1), QPN (4), Q_Key (4), responder's GID (16), private data length (1),
 *        private data (at most 136)
 * </pre>
 *
 * The request id names the requester's attempt: a REQ sent again (its REP lost) gets the same
 * answer, and a REP for another attempt is dropped. Statuses are the IB CM's SIDR statuses.
 */
record SidrMessage(int kind, int requestId, int status, int qpn, int qkey, Gid gid,
    byte[] privateData) {
  static final int MAGIC = 0x73434d55;
  static final int REQ = 1;
  static final int REP = 2;
  /** librdmacm's: a SIDR_REQ's 216 bytes of private data less the CM's 36-byte header. */
  static final int MAX_REQ_PRIVATE_DATA = 180;
  /** IB_CM_SIDR_REP_PRIVATE_DATA_SIZE. */
  static final int MAX_REP_PRIVATE_DATA = 136;
  /** Larger than any valid message (a REQ with 180 bytes of private data is 206). */
  static final int MAX_BYTES = 256;
  /** ib_cm_sidr_status. */
  static final int SUCCESS = 0;
  static final int UNSUPPORTED = 1;
  static final int REJECT = 2;

  /**
   * {@code data} as the kernel's CM delivers it: zeros after it up to the message's whole
   * private data ({@code size} bytes), since an IB CM message has no length of its own.
   */
  static byte[] padded(byte[] data, int size) {
    return java.util.Arrays.copyOf(data, Math.max(size, data.length));
  }

  static SidrMessage req(int requestId, Gid gid, byte[] privateData) {
    return new SidrMessage(REQ, requestId, 0, 0, 0, gid, privateData);
  }

  static SidrMessage rep(int requestId, int status, int qpn, int qkey, Gid gid,
      byte[] privateData) {
    return new SidrMessage(REP, requestId, status, qpn, qkey, gid == null ? Gid.ZERO : gid,
        privateData);
  }

  byte[] encode() {
    int max = kind == REQ ? MAX_REQ_PRIVATE_DATA : MAX_REP_PRIVATE_DATA;
    if (privateData.length > max) {
      throw new IllegalArgumentException((kind == REQ ? "a SIDR request" : "a SIDR reply")
          + " carries at most " + max + " bytes of private data, got " + privateData.length);
    }
    if (qpn < 0 || qpn > 0xffffff || status < 0 || status > 255) {
      throw new IllegalArgumentException("qpn " + qpn + " or status " + status + " out of range");
    }
    byte[] b = new byte[(kind == REQ ? 9 + 17 : 9 + 26) + privateData.length];
    putInt(b, 0, MAGIC);
    b[4] = (byte) kind;
    putInt(b, 5, requestId);
    int at = 9;
    if (kind == REP) {
      b[at++] = (byte) status;
      putInt(b, at, qpn);
      putInt(b, at + 4, qkey);
      at += 8;
    }
    System.arraycopy(gid.toBytes(), 0, b, at, 16);
    at += 16;
    b[at++] = (byte) privateData.length;
    System.arraycopy(privateData, 0, b, at, privateData.length);
    return b;
  }

  /**
   * Reads {@code b[0, n)}; ProtocolException naming what is wrong for anything that is not
   * exactly one valid message. Allocates only the private data, after its length was checked.
   */
  static SidrMessage parse(byte[] b, int n) throws ProtocolException {
    if (b == null || n < 0 || n > b.length) throw new ProtocolException("no SIDR message");
    if (n < 9) throw new ProtocolException("a SIDR message of " + n + " bytes (at least 9)");
    if (n > MAX_BYTES) {
      throw new ProtocolException("a SIDR message of " + n + " bytes (at most " + MAX_BYTES + ")");
    }
    int magic = getInt(b, 0);
    if (magic != MAGIC) {
      throw new ProtocolException("not a soft CM SIDR message (magic 0x"
          + Integer.toHexString(magic) + ")");
    }
    int kind = b[4] & 0xff;
    if (kind != REQ && kind != REP) throw new ProtocolException("unknown SIDR kind " + kind);
    int requestId = getInt(b, 5);
    int at = 9;
    int status = 0;
    int qpn = 0;
    int qkey = 0;
    int fixed = kind == REQ ? 9 + 17 : 9 + 26;
    if (n < fixed) {
      throw new ProtocolException("a SIDR " + name(kind) + " of " + n + " bytes is truncated");
    }
    if (kind == REP) {
      status = b[at++] & 0xff;
      qpn = getInt(b, at);
      qkey = getInt(b, at + 4);
      at += 8;
      if (status > 5) throw new ProtocolException("SIDR reply status " + status + " is unknown");
      if (qpn < 0 || qpn >= 0xffffff || (status == SUCCESS && qpn <= 1)) {
        throw new ProtocolException("SIDR reply names QP 0x" + Integer.toHexString(qpn)
            + ", not a UD QP's number");
      }
    }
    byte[] g = new byte[16];
    System.arraycopy(b, at, g, 0, 16);
    at += 16;
    Gid gid = Gid.of(g);
    boolean needsGid = kind == REQ || status == SUCCESS;
    if (needsGid && (gid.isZero() || (g[0] & 0xff) == 0xff)) {
      throw new ProtocolException("SIDR " + name(kind) + " from GID " + gid
          + ", which is zero or multicast");
    }
    int length = b[at++] & 0xff;
    int max = kind == REQ ? MAX_REQ_PRIVATE_DATA : MAX_REP_PRIVATE_DATA;
    if (length > max) {
      throw new ProtocolException("SIDR " + name(kind) + " with " + length
          + " bytes of private data (at most " + max + ")");
    }
    if (at + length != n) {
      throw new ProtocolException("SIDR " + name(kind) + " says " + length
          + " bytes of private data, has " + (n - at));
    }
    byte[] data = new byte[length];
    System.arraycopy(b, at, data, 0, length);
    return new SidrMessage(kind, requestId, status, qpn, qkey, gid, data);
  }

  private static String name(int kind) {
    return kind == REQ ? "request" : "reply";
  }

  private static int getInt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8)
        | (b[at + 3] & 0xff);
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }

  @Override
  public String toString() {
    return kind == REQ ? "SIDR_REQ{id=" + requestId + ", gid=" + gid + ", " + privateData.length
        + " bytes of private data}"
        : "SIDR_REP{id=" + requestId + ", status=" + status + ", qpn=" + qpn + ", qkey=0x"
            + Integer.toHexString(qkey) + ", " + privateData.length + " bytes of private data}";
  }
}
