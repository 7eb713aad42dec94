package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.Mtu;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;

/**
 * One message of the soft CM's handshake, the IB CM's REQ, REP, RTU, REJ, DREQ and DREP, carried
 * over a {@link CmLink} as a frame: a 4-byte length, then a magic number, the kind, the number of
 * the conversation (the CM connection) it belongs to, and the kind's fields. Only REQ, REP and
 * REJ have fields; the others are bare. A REQ and a REP carry their sender's port: the link's own
 * port is shared by every conversation on it.
 */
record CmMessage(
    Kind kind, int qpn, int psn, Gid gid, Mtu mtu, int responderResources, int initiatorDepth,
    int retryCount, int rnrRetryCount, int reason, byte[] privateData, int port) {

  enum Kind {
    REQ(1), REP(2), RTU(3), REJ(4), DREQ(5), DREP(6);

    final int code;

    Kind(int code) {
      this.code = code;
    }

    static Kind of(int code) throws ProtocolException {
      for (Kind k : values()) if (k.code == code) return k;
      throw new ProtocolException("unknown CM message kind " + code);
    }

    /** librdmacm's private data limits; the bare kinds carry none. */
    int maxPrivateData() {
      switch (this) {
        case REQ: return ConnectionParameters.MAX_CONNECT_PRIVATE_DATA;
        case REP: return ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA;
        case REJ: return ConnectionParameters.MAX_REJECT_PRIVATE_DATA;
        default: return 0;
      }
    }
  }

  /** "sCM2": tells a CM peer from some other TCP service answering on the port. */
  static final int MAGIC = 0x73434d32;
  /** Larger than any valid frame (a REP with 196 bytes of private data is 236). */
  static final int MAX_FRAME = 512;
  /** Magic, kind and conversation: the shortest frame. */
  static final int HEADER = 9;

  /** A message and the conversation it belongs to, as a frame carries them. */
  record Framed(int conversation, CmMessage message) {}
  /** IB CM reject reasons (ib_cm_rej_reason) the soft CM sends besides consumer defined. */
  static final int REJECT_TIMEOUT = 4;

  static CmMessage req(int qpn, int psn, Gid gid, Mtu mtu, ConnectionParameters p, int port) {
    return new CmMessage(Kind.REQ, qpn, psn, gid, mtu, p.responderResources(), p.initiatorDepth(),
        p.retryCount(), p.rnrRetryCount(), 0, p.privateDataOrEmpty(), port);
  }

  static CmMessage rep(int qpn, int psn, Gid gid, Mtu mtu, ConnectionParameters p, int port) {
    return new CmMessage(Kind.REP, qpn, psn, gid, mtu, p.responderResources(), p.initiatorDepth(),
        p.retryCount(), p.rnrRetryCount(), 0, p.privateDataOrEmpty(), port);
  }

  static CmMessage rej(int reason, byte[] privateData) {
    return new CmMessage(Kind.REJ, 0, 0, null, null, 0, 0, 0, 0, reason,
        privateData == null ? new byte[0] : privateData, 0);
  }

  static CmMessage bare(Kind kind) {
    return new CmMessage(kind, 0, 0, null, null, 0, 0, 0, 0, 0, new byte[0], 0);
  }

  /**
   * What the peer asked for, as the receiving side's {@code rdma_conn_param}: like rdma_cm, the
   * peer's initiator depth becomes our responder resources and the other way round, so the
   * parameters can be handed straight back to accept.
   */
  ConnectionParameters asSeenByReceiver() {
    return new ConnectionParameters(privateData.clone(), initiatorDepth, responderResources,
        retryCount, rnrRetryCount);
  }

  /** Writes the frame; throws IllegalArgumentException for fields the format cannot carry. */
  void writeTo(DataOutputStream out, int conversation) throws IOException {
    out.write(encode(conversation));
    out.flush();
  }

  /** The frame, length first; throws IllegalArgumentException for what it cannot carry. */
  byte[] encode(int conversation) {
    try {
      return encodeFrame(conversation);
    } catch (IOException e) {
      throw new IllegalStateException("writing to memory failed", e);
    }
  }

  private byte[] encodeFrame(int conversation) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
    DataOutputStream d = new DataOutputStream(bytes);
    d.writeInt(0); // the length, below
    d.writeInt(MAGIC);
    d.writeByte(kind.code);
    d.writeInt(conversation);
    if (privateData.length > kind.maxPrivateData()) {
      throw new IllegalArgumentException(kind + " carries at most " + kind.maxPrivateData()
          + " bytes of private data, got " + privateData.length);
    }
    switch (kind) {
      case REQ:
      case REP:
        d.writeInt(field("qpn", qpn, 0xffffff));
        d.writeInt(field("psn", psn, 0xffffff));
        d.write(gid.toBytes());
        d.writeByte(mtu.code);
        d.writeByte(field("responderResources", responderResources, 255));
        d.writeByte(field("initiatorDepth", initiatorDepth, 255));
        d.writeByte(field("retryCount", retryCount, 7));
        d.writeByte(field("rnrRetryCount", rnrRetryCount, 7));
        d.writeShort(field("port", port, 0xffff));
        d.writeByte(privateData.length);
        d.write(privateData);
        break;
      case REJ:
        d.writeShort(field("reason", reason, 0xffff));
        d.writeByte(privateData.length);
        d.write(privateData);
        break;
      default:
        break;
    }
    byte[] frame = bytes.toByteArray();
    int length = frame.length - 4;
    frame[0] = (byte) (length >>> 24);
    frame[1] = (byte) (length >>> 16);
    frame[2] = (byte) (length >>> 8);
    frame[3] = (byte) length;
    return frame;
  }

  /** Reads one frame; EOFException at a clean end, ProtocolException for anything malformed. */
  static Framed readFrom(DataInputStream in) throws IOException {
    int length = in.readInt();
    int record = length >>> 16;
    if (record == 0x1603 || record == 0x1503) { // a TLS handshake or alert record, version 3.x
      throw new ProtocolException("TLS where a CM frame was due: the peer has"
          + " pekko-rdma.soft.tls.enabled on, this process off");
    }
    if (length < HEADER || length > MAX_FRAME) {
      throw new ProtocolException("CM frame of " + length + " bytes (valid: " + HEADER + " to "
          + MAX_FRAME + ")");
    }
    byte[] frame = new byte[length];
    in.readFully(frame);
    DataInputStream d = new DataInputStream(new ByteArrayInputStream(frame));
    int magic = d.readInt();
    if (magic != MAGIC) {
      throw new ProtocolException("not a soft CM peer (magic 0x" + Integer.toHexString(magic)
          + ")");
    }
    Kind kind = Kind.of(d.readUnsignedByte());
    int conversation = d.readInt();
    CmMessage m;
    try {
      switch (kind) {
        case REQ:
        case REP: {
          int qpn = d.readInt();
          int psn = d.readInt();
          byte[] gid = new byte[16];
          d.readFully(gid);
          Mtu mtu = Mtu.of(d.readUnsignedByte());
          int rr = d.readUnsignedByte();
          int id = d.readUnsignedByte();
          int retry = d.readUnsignedByte();
          int rnr = d.readUnsignedByte();
          int port = d.readUnsignedShort();
          if (port == 0) throw new IllegalArgumentException("port 0");
          byte[] data = privateData(d, kind);
          m = new CmMessage(kind, field("qpn", qpn, 0xffffff), field("psn", psn, 0xffffff),
              Gid.of(gid), mtu, rr, id, field("retryCount", retry, 7),
              field("rnrRetryCount", rnr, 7), 0, data, port);
          break;
        }
        case REJ: {
          int reason = d.readUnsignedShort();
          m = rej(reason, privateData(d, kind));
          break;
        }
        default:
          m = bare(kind);
      }
    } catch (IllegalArgumentException e) {
      throw new ProtocolException("bad " + kind + ": " + e.getMessage());
    } catch (EOFException e) {
      throw new ProtocolException(kind + " frame of " + length + " bytes is truncated");
    }
    if (d.available() != 0) {
      throw new ProtocolException(kind + " frame has " + d.available() + " bytes too many");
    }
    return new Framed(conversation, m);
  }

  private static byte[] privateData(DataInputStream d, Kind kind) throws IOException {
    int n = d.readUnsignedByte();
    if (n > kind.maxPrivateData()) {
      throw new ProtocolException(kind + " with " + n + " bytes of private data (at most "
          + kind.maxPrivateData() + ")");
    }
    byte[] data = new byte[n];
    d.readFully(data);
    return data;
  }

  private static int field(String name, int value, int max) {
    if (value < 0 || value > max) {
      throw new IllegalArgumentException(name + " = " + value + " is outside [0, " + max + "]");
    }
    return value;
  }

  @Override
  public String toString() {
    switch (kind) {
      case REQ:
      case REP:
        return kind + "{qpn=" + qpn + ", psn=" + psn + ", gid=" + gid + ", mtu=" + mtu.bytes
            + ", rr=" + responderResources + ", id=" + initiatorDepth + ", retry=" + retryCount
            + ", rnr=" + rnrRetryCount + ", port=" + port + ", " + privateData.length
            + " bytes of private data}";
      case REJ:
        return "REJ{reason=" + reason + ", " + privateData.length + " bytes of private data}";
      default:
        return kind.toString();
    }
  }
}
