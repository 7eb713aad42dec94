package dev.pekkordma.soft;

import dev.pekkordma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The fabric's wire format, and the checks every field gets before it is used.
 *
 * <p>A connection opens with a plain 24-byte OPENING that says what it is for: a LINK (a
 * process that will send requests), or a PROOF about a nonce this side issued. TLS follows, when
 * on; then the handshake, fixed 72-byte messages. A LINK's HELLO names the listener its process
 * answers at (from), the listener it was sent to (to) and a random nonce; the accepting side
 * asks the listener named as from, on a connection of its own (a PROOF), whether it issued that
 * nonce for a connection bound as the accepting side sees this one: from, to, and under TLS both
 * certificates ({@link ChannelBinding}). Only then does it answer WELCOME, and the connection
 * stands for that process; requests on it can only claim source GIDs of that process, as rxe
 * trusts a packet's source address. A refusal carries a code saying why.
 *
 * <p>When both sides would carry the link through shared memory (the code of HELLO and of
 * WELCOME says so), the connecting side then sends a RING_OFFER, naming a ring file or none, and
 * the accepting side answers a file with a RING_ANSWER (code 0: yes, else why not), as {@link
 * SharedMemoryHandshake} says. On yes, the frames go through the rings.
 *
 * <p>Then frames: an 80-byte header, the payload, and after a payload one trailer byte (0: the
 * sender's memory stayed registered while it was read, 1: it did not, so the bytes before are
 * void). Little-endian.
 */
final class FabricWire {
  static final int MAGIC = 0x32465250; // "PRF2"
  static final byte VERSION = 2;
  static final int OPENING_BYTES = 24;
  static final int HANDSHAKE_BYTES = 72;
  static final int NONCE_BYTES = 16;
  static final int BINDING_BYTES = 32;
  // what a connection is for (its opening)
  static final byte LINK = 1;
  static final byte PROOF = 2;
  // handshake kinds
  static final byte HELLO = 1;
  static final byte WELCOME = 2;
  static final byte REFUSED = 3;
  static final byte PROVE = 4;
  static final byte PROVEN = 5;
  static final byte NOT_PROVEN = 6;
  static final byte RING_OFFER = 7;
  static final byte RING_ANSWER = 8;
  /** A HELLO's or WELCOME's code: its sender would carry the link through shared memory. */
  static final short SHARED_MEMORY = 1;
  /** A RING_OFFER's code: no file is offered (the connecting side could not make one). */
  static final short NO_RING = 1;
  /** Where a RING_OFFER carries the file's name (ASCII, zero-padded), and its length at most. */
  static final int RING_NAME_AT = 12;
  static final int RING_NAME_BYTES = 48;
  // why a HELLO was refused (REFUSED's code)
  static final short NOT_CONFIRMED = 1;
  static final short RELAYED = 2;
  static final short OWN_ADDRESS = 3;
  static final short CERTIFICATE = 4;
  static final short BUSY = 5;

  static final int HEADER_BYTES = 80;
  // frame kinds
  static final byte REQUEST = 1;
  static final byte DATAGRAM = 2;
  static final byte RESPONSE = 3;
  static final byte TRAILER_WHOLE = 0;
  static final byte TRAILER_ABORTED = 1;

  private FabricWire() {}

  /** A frame that breaks the protocol: the connection it came on is dropped. */
  static final class FabricViolation extends RuntimeException {
    FabricViolation(String message) {
      super(message, null, false, false);
    }
  }

  // ---------------------------------------------------------------- opening and handshake

  /** A connection's first bytes, before TLS: what it is for, and for a PROOF, the nonce. */
  static byte[] opening(byte purpose, byte[] nonce) {
    ByteBuffer b = ByteBuffer.allocate(OPENING_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC).put(VERSION).put(purpose).putShort((short) 0);
    if (nonce != null) b.put(nonce);
    return b.array();
  }

  /** Checks an opening's magic, version and purpose; returns the purpose. */
  static byte purpose(ByteBuffer opening) {
    ByteBuffer b = opening.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    b.rewind();
    checkMagicAndVersion(b.getInt(), b.get());
    byte purpose = b.get();
    if (purpose != LINK && purpose != PROOF) {
      throw new FabricViolation("an opening for purpose " + purpose + " (1 or 2 expected)");
    }
    return purpose;
  }

  /** The nonce a PROOF opening asks about. */
  static byte[] openingNonce(ByteBuffer opening) {
    byte[] nonce = new byte[NONCE_BYTES];
    ByteBuffer b = opening.duplicate();
    b.position(8);
    b.get(nonce);
    return nonce;
  }

  private static void checkMagicAndVersion(int magic, byte version) {
    if (magic != MAGIC) {
      throw new FabricViolation("not a soft RDMA fabric peer (magic 0x" + Integer.toHexString(magic)
          + ")");
    }
    if (version != VERSION) {
      throw new FabricViolation("fabric protocol version " + version + ", this side speaks "
          + VERSION);
    }
  }

  /** Why a HELLO was refused, in words for the connecting side's error. */
  static String refusal(short code) {
    switch (code) {
      case NOT_CONFIRMED: return "the listener this process named did not confirm the nonce";
      case RELAYED: return "the HELLO names another listener than the one it reached (relayed)";
      case OWN_ADDRESS: return "the HELLO claims the accepting fabric's own address";
      case CERTIFICATE: return "this process's TLS certificate may not claim its address"
          + " (pekko-rdma.soft.tls.identities, or an IP subject alternative name)";
      case BUSY: return "it serves as many processes as it may"
          + " (pekko-rdma.soft.fabric.max-connections)";
      default: return "code " + code;
    }
  }

  /**
   * A handshake message: kind, a code (refusals), the sender's fabric (from), the listener it
   * was sent to (to), a nonce, and a channel binding (PROVE).
   */
  static final class Handshake {
    byte kind;
    short code;
    FabricAddress from = FabricAddress.NONE;
    FabricAddress to = FabricAddress.NONE;
    final byte[] nonce = new byte[NONCE_BYTES];
    final byte[] binding = new byte[BINDING_BYTES];

    Handshake() {}

    Handshake(byte kind) {
      this.kind = kind;
    }

    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(HANDSHAKE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      b.putInt(MAGIC).put(VERSION).put(kind).putShort(code);
      put(b, from);
      put(b, to);
      b.put(nonce).put(binding);
      return b.array();
    }

    /** Parses {@code bytes} (72 of them), expecting one of {@code kinds}. */
    static Handshake decode(byte[] bytes, byte... kinds) {
      ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
      checkMagicAndVersion(b.getInt(), b.get());
      Handshake h = new Handshake();
      h.kind = b.get();
      boolean expected = false;
      for (byte k : kinds) expected |= k == h.kind;
      if (!expected)
        throw new FabricViolation("handshake message of kind " + h.kind + " out of turn");
      h.code = b.getShort();
      h.from = address(b);
      h.to = address(b);
      b.get(h.nonce);
      b.get(h.binding);
      return h;
    }

    private static void put(ByteBuffer b, FabricAddress a) {
      b.put(a.ip()).putShort((short) a.port()).putShort((short) 0);
    }

    private static FabricAddress address(ByteBuffer b) {
      byte[] ip = new byte[4];
      b.get(ip);
      int port = b.getShort() & 0xffff;
      b.getShort();
      return new FabricAddress(ip, port);
    }
  }

  /**
   * A RING_OFFER: a ring file's name and each ring's capacity, or none (code {@link #NO_RING}).
   * The name is checked by whoever opens it, not here: any bytes are a name that matches nothing.
   */
  record RingOffer(short code, int capacity, String name) {
    byte[] encode() {
      ByteBuffer b = ByteBuffer.allocate(HANDSHAKE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      b.putInt(MAGIC).put(VERSION).put(RING_OFFER).putShort(code).putInt(capacity);
      byte[] n = name.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      if (n.length > RING_NAME_BYTES) throw new IllegalArgumentException("name " + name);
      b.put(n);
      return b.array();
    }

    static RingOffer decode(byte[] bytes) {
      ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
      checkMagicAndVersion(b.getInt(), b.get());
      byte kind = b.get();
      if (kind != RING_OFFER) {
        throw new FabricViolation("handshake message of kind " + kind + " out of turn (a RING_OFFER"
            + " expected)");
      }
      short code = b.getShort();
      int capacity = b.getInt();
      int length = 0;
      while (length < RING_NAME_BYTES && bytes[RING_NAME_AT + length] != 0) length++;
      return new RingOffer(code, capacity, new String(bytes, RING_NAME_AT, length,
          java.nio.charset.StandardCharsets.ISO_8859_1));
    }
  }

  // ---------------------------------------------------------------- frames

  /** A frame's header as read, every field checked. Reused by its connection. */
  static final class FrameHeader {
    final ByteBuffer bytes = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    byte kind;
    int srcDevice;
    int destDevice;
    int destQpn;
    int srcQpn;
    int psn;
    int opcodeOrCode;
    int flagsOrRnrTimer;
    int imm;
    int rkey;
    int qkey;
    long readLength;
    long payloadLength;
    long remoteAddress;
    long compareAddOrAtomic;
    long swap;

    /**
     * Parses {@link #bytes}; throws {@link FabricViolation} naming the first field out of range.
     */
    void decode(long maxMessage) {
      ByteBuffer b = bytes;
      b.clear();
      kind = b.get();
      b.get();
      srcDevice = b.getShort() & 0xffff;
      destDevice = b.getShort() & 0xffff;
      b.getShort();
      destQpn = b.getInt();
      srcQpn = b.getInt();
      psn = b.getInt();
      opcodeOrCode = b.getInt();
      flagsOrRnrTimer = b.getInt();
      imm = b.getInt();
      rkey = b.getInt();
      qkey = b.getInt();
      readLength = b.getLong();
      payloadLength = b.getLong();
      remoteAddress = b.getLong();
      compareAddOrAtomic = b.getLong();
      swap = b.getLong();
      if (kind != REQUEST && kind != DATAGRAM && kind != RESPONSE) {
        throw new FabricViolation("unknown frame kind " + kind);
      }
      field("destination QPN", destQpn, 0xffffff);
      field("source QPN", srcQpn, 0xffffff);
      field("PSN", psn, 0xffffff);
      if (payloadLength < 0 || payloadLength > maxMessage) {
        throw new FabricViolation(
            "payload of "
                + payloadLength
                + " bytes (the limit is "
                + maxMessage
                + ", max-msg-size)");
      }
      if (kind == RESPONSE) {
        field("response code", opcodeOrCode, SoftPeer.Response.DROPPED);
        field("RNR timer", flagsOrRnrTimer, 31);
        return;
      }
      WrOpcode op = opcode();
      boolean dataOp = op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_WRITE_WITH_IMM
          || op.isSend();
      if (kind == DATAGRAM && !dataOp) {
        throw new FabricViolation(op + " cannot travel as a datagram");
      }
      if (!dataOp && payloadLength != 0) {
        throw new FabricViolation(op + " carries " + payloadLength + " bytes of payload");
      }
      if (op == WrOpcode.RDMA_READ) {
        if (readLength < 0 || readLength > maxMessage) {
          throw new FabricViolation("RDMA READ of " + readLength + " bytes (the limit is "
              + maxMessage + ", max-msg-size)");
        }
      } else if (readLength != 0) {
        throw new FabricViolation(op + " with a read length of " + readLength);
      }
    }

    /** A request's opcode: one a peer may send (not a local one such as BIND_MW). */
    WrOpcode opcode() {
      int c = opcodeOrCode;
      if (c < 0 || c > WrOpcode.SEND_WITH_INV.code || c == WrOpcode.LOCAL_INV.code
          || c == WrOpcode.BIND_MW.code) {
        throw new FabricViolation("opcode " + c + " is not a request a peer may send");
      }
      return WrOpcode.of(c);
    }

    /** Copies a request's fields into {@code h} (the source GID is the connection's to set). */
    void toRequest(SoftPeer.RequestHeader h) {
      h.destQpn = destQpn;
      h.srcQpn = srcQpn;
      h.psn = psn;
      h.opcode = opcodeOrCode;
      h.sendFlags = flagsOrRnrTimer;
      h.immOrRkeyBigEndian = imm;
      h.rkey = rkey;
      h.qkey = qkey;
      h.readLength = readLength;
      h.payloadLength = payloadLength;
      h.remoteAddress = remoteAddress;
      h.compareAdd = compareAddOrAtomic;
      h.swap = swap;
    }

    void toResponse(SoftPeer.Response r) {
      r.psn = psn;
      r.code = opcodeOrCode;
      r.rnrTimer = flagsOrRnrTimer;
      r.atomicValue = compareAddOrAtomic;
      r.readLength = payloadLength;
    }

    private static void field(String name, int value, int max) {
      if (value < 0 || value > max) {
        throw new FabricViolation(name + " " + value + " is outside [0, " + max + "]");
      }
    }
  }

  /** Writes a request or datagram header into {@code b} (cleared, then flipped). */
  static void encodeRequest(ByteBuffer b, byte kind, int srcDevice, int destDevice,
      SoftPeer.RequestHeader h) {
    b.clear();
    b.put(kind).put((byte) 0).putShort((short) srcDevice).putShort((short) destDevice)
        .putShort((short) 0);
    b.putInt(h.destQpn).putInt(h.srcQpn).putInt(h.psn).putInt(h.opcode).putInt(h.sendFlags)
        .putInt(h.immOrRkeyBigEndian).putInt(h.rkey).putInt(h.qkey);
    b.putLong(h.readLength).putLong(h.payloadLength).putLong(h.remoteAddress)
        .putLong(h.compareAdd).putLong(h.swap);
    b.flip();
  }

  /** Writes a response header: to the requester's QP, carrying {@code payload} bytes. */
  static void encodeResponse(ByteBuffer b, int srcDevice, int destDevice, int destQpn,
      int srcQpn, SoftPeer.Response r, long payload) {
    b.clear();
    b.put(RESPONSE).put((byte) 0).putShort((short) srcDevice).putShort((short) destDevice)
        .putShort((short) 0);
    b.putInt(destQpn).putInt(srcQpn).putInt(r.psn).putInt(r.code).putInt(r.rnrTimer)
        .putInt(0).putInt(0).putInt(0);
    b.putLong(0).putLong(payload).putLong(0).putLong(r.atomicValue).putLong(0);
    b.flip();
  }
}
