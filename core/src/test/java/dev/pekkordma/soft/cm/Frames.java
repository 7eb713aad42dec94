package dev.pekkordma.soft.cm;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;

/**
 * CM frames written byte by byte as a peer would, independently of {@link CmMessage}'s own
 * writer, so that tests can send what it would never write: each frame is a 4-byte length, the
 * magic, the kind, the conversation ({@link #CONVERSATION} unless a test says otherwise) and the
 * kind's fields.
 */
final class Frames {
  static final int MAGIC = 0x73434d32;
  /** The conversation a test's frames belong to: the first on its link. */
  static final int CONVERSATION = 1;
  /** The port a test's REQ and REP name as their sender's. */
  static final int PORT = 0x4321;
  static final int REQ = 1, REP = 2, RTU = 3, REJ = 4, DREQ = 5, DREP = 6;
  static final int MAX_REQ_DATA = 56, MAX_REP_DATA = 196, MAX_REJ_DATA = 148;

  private Frames() {}

  /** A REQ or REP with these field values (unchecked: the caller picks valid or not). */
  static byte[] connect(int kind, int qpn, int psn, int mtuCode, int retry, int rnr, byte[] data) {
    return frame(MAGIC, kind, body -> {
      body.writeInt(qpn);
      body.writeInt(psn);
      body.write(new byte[16]); // the GID
      body.writeByte(mtuCode);
      body.writeByte(1); // responder resources
      body.writeByte(1); // initiator depth
      body.writeByte(retry);
      body.writeByte(rnr);
      body.writeShort(PORT);
      body.writeByte(data.length);
      body.write(data);
    });
  }

  static byte[] req(byte[] data) {
    return connect(REQ, 0x1234, 0x5678, 5, 7, 7, data);
  }

  static byte[] validReq() {
    return req(new byte[0]);
  }

  static byte[] rej(int reason, byte[] data) {
    return frame(MAGIC, REJ, body -> {
      body.writeShort(reason);
      body.writeByte(data.length);
      body.write(data);
    });
  }

  static byte[] bare(int kind) {
    return frame(MAGIC, kind, body -> { });
  }

  interface Body {
    void write(DataOutputStream body) throws IOException;
  }

  /** length, magic, kind, conversation, then the body: the length counts all but itself. */
  static byte[] frame(int magic, int kind, Body body) {
    return frame(magic, kind, CONVERSATION, body);
  }

  static byte[] frame(int magic, int kind, int conversation, Body body) {
    try {
      ByteArrayOutputStream inner = new ByteArrayOutputStream();
      DataOutputStream d = new DataOutputStream(inner);
      d.writeInt(magic);
      d.writeByte(kind);
      d.writeInt(conversation);
      body.write(d);
      return withLength(inner.size(), inner.toByteArray());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code rest} after a length prefix of {@code length}, whatever that says. */
  static byte[] withLength(int length, byte[] rest) {
    byte[] out = new byte[4 + rest.length];
    out[0] = (byte) (length >>> 24);
    out[1] = (byte) (length >>> 16);
    out[2] = (byte) (length >>> 8);
    out[3] = (byte) length;
    System.arraycopy(rest, 0, out, 4, rest.length);
    return out;
  }

  static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) n += p.length;
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** Reads one frame as a peer would; returns its kind. */
  static int readKind(InputStream in) throws IOException {
    DataInputStream d = new DataInputStream(in);
    int length = d.readInt();
    if (length < 9 || length > 512) throw new IOException("frame of " + length + " bytes");
    byte[] frame = new byte[length];
    d.readFully(frame);
    return frame[4];
  }

  static String hex(byte[] b) {
    return b.length > 48 ? Arrays.toString(Arrays.copyOf(b, 48)) + "... (" + b.length + " bytes)"
        : Arrays.toString(b);
  }
}
