package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.WcOpcode;

/**
 * The peer's half of the protocol ({@link Wire}), checked message by message before the stage
 * uses a number from it. One per connection, used on the stage's thread. {@link #receive}
 * answers null when the message is allowed, else the rule it breaks: a string made only then,
 * so the data path allocates nothing.
 *
 * <p>The rules: every message has an immediate of a known kind. Data comes as an RDMA WRITE
 * WITH IMM of at most a slot, never more writes than the slots we granted (our ring, then each
 * credit we sent), never after the peer's FIN; a MORE write (more writes continue the message)
 * carries at least {@link Wire#MIN_PIECE} bytes (or a whole slot, if ours are smaller), and a
 * message's writes together stay within {@code max-message-size} where the stage puts messages
 * together. A BATCH (several whole ByteStrings in one write) comes only to a side that offered to
 * take them, never in the middle of a message, and carries at least one ByteString's length; the
 * lengths inside are checked where they are read ({@link Receiver}). Control comes as a zero-length SEND of a known code, but for a RING: an RDMA WRITE
 * of {@link Wire.Ring#LENGTH} bytes, counted as a write, never a second before our RING_ACK of
 * the first (a RING may follow its FIN: it still reads). Credits returned never exceed our
 * writes into its current ring not yet credited, and a CREDIT returns at least one. FIN and
 * CANCEL come once each, the FIN not in the middle of a message (unless we stopped reading: a
 * writer that hears so drops what it was writing, and ends); FIN_ACK once, after our FIN; a RING_ACK only for a RING of ours; a CANCEL takes at
 * most the writes we made. Once the peer acknowledges our RING, our new ring's slots are what
 * it may write.
 */
final class ProtocolValidator {
  private static final long WRAP = 1L << 24; // a CANCEL's count is modulo this

  private int slotSize;
  private final long maxMessage; // Long.MAX_VALUE: the stage does not put messages together
  private final String maxMessageSetting;
  private long granted; // writes the peer may have made so far
  private long written; // data writes it made
  private long returned; // credits it gave back
  private long message; // bytes of the message its MORE writes began
  private boolean midMessage;
  private boolean fin;
  private boolean finAck;
  private boolean cancel;
  private boolean finSent;
  private boolean stoppedReading;
  private int peerFirstSlot = Integer.MAX_VALUE;
  private Wire.Ring announced; // our RING the peer has not acknowledged yet
  private boolean peerRingUnacked; // its RING we have not acknowledged yet
  private boolean batches; // our ring offers to take BATCH writes

  /**
   * Our ring of {@code slots} slots of {@code slotSize} bytes; messages put together are at
   * most {@code maxMessage} bytes ({@code maxMessageSetting}), or {@code Long.MAX_VALUE}.
   */
  ProtocolValidator(int slots, int slotSize, long maxMessage, String maxMessageSetting) {
    this.slotSize = slotSize;
    this.maxMessage = maxMessage;
    this.maxMessageSetting = maxMessageSetting;
    this.granted = slots;
  }

  /**
   * The peer's first ring, checked by {@link Wire.Ring#decode}: its slots are no larger than the
   * peer's writes can be, which bounds what its MORE writes must carry.
   */
  void peerRing(Wire.Ring ring) {
    peerFirstSlot = ring.slotSize();
  }

  /** Our rings say we take BATCH writes. */
  void takeBatches() {
    batches = true;
  }

  /** We sent a RING: once the peer acknowledges it, {@code next}'s slots are what it may write. */
  void announced(Wire.Ring next) {
    announced = next;
  }

  /**
   * We acknowledged the peer's RING, having made {@code ourWrites} writes in all: the credits it
   * returns from now on are for our writes into its new ring.
   */
  void acknowledgedPeerRing(long ourWrites) {
    peerRingUnacked = false;
    returned = ourWrites;
  }

  /** We sent {@code n} credits: the peer may write that many more. */
  void sentCredits(int n) {
    granted += n;
  }

  /** We stopped reading: what the peer writes is dropped, its message boundaries too. */
  void stoppedReading() {
    stoppedReading = true;
  }

  /** We sent our FIN: the peer may acknowledge it. */
  void sentFin() {
    finSent = true;
  }

  /**
   * A receive completed successfully with {@code opcode}, {@code byteLength} bytes and the
   * immediate {@code imm} (if {@code withImm}), after we made {@code ourWrites} data writes.
   * Null if the peer may send that; else what is wrong with it.
   */
  String receive(WcOpcode opcode, boolean withImm, int byteLength, int imm, long ourWrites) {
    if (!withImm) {
      return "a message without an immediate (" + opcode + ", " + unsigned(byteLength)
          + " bytes)";
    }
    int kind = Wire.kind(imm);
    if (kind == Wire.CONTROL && Wire.code(imm) == Wire.RING) {
      return ring(opcode, byteLength, imm, ourWrites);
    }
    if (kind == Wire.CONTROL) return control(opcode, byteLength, imm, ourWrites);
    String wrong = data(opcode, byteLength, kind == Wire.MORE, imm);
    return wrong != null ? wrong : credits(Wire.credits(imm), ourWrites);
  }

  private String data(WcOpcode opcode, int byteLength, boolean more, int imm) {
    if (opcode != WcOpcode.RECV_RDMA_WITH_IMM) {
      return "a data immediate " + hex(imm) + " on a " + opcode
          + " (a SEND: no data was written with it)";
    }
    if (fin) return "data after its FIN";
    if (Wire.kind(imm) == Wire.BATCH) {
      if (!batches) return "a BATCH write, when our ring did not offer to take them";
      if (midMessage) return "a BATCH in the middle of a message (after a MORE write)";
      if (byteLength >= 0 && byteLength < Wire.BATCH_HEADER) {
        return "a BATCH write of " + byteLength + " bytes: too few for one ByteString's "
            + Wire.BATCH_HEADER + "-byte length";
      }
    }
    if (byteLength < 0 || byteLength > slotSize) {
      return "a write of " + unsigned(byteLength) + " bytes, larger than our slots of "
          + slotSize + " bytes";
    }
    if (written >= granted) {
      return "more writes than the credits we gave: write #" + (written + 1) + " with "
          + granted + " granted";
    }
    int least = Math.min(Math.min(Wire.MIN_PIECE, slotSize), peerFirstSlot);
    if (more && byteLength < least) {
      return "a MORE write of " + byteLength + " bytes: one that more writes continue carries at"
          + " least " + least;
    }
    // a BATCH's ByteStrings are checked against it one by one, as they are read
    if (Wire.kind(imm) != Wire.BATCH) message += byteLength;
    if (message > maxMessage) {
      return "a message of more than " + maxMessage + " bytes (" + maxMessageSetting + ")";
    }
    written++;
    midMessage = more;
    if (!more) message = 0;
    return null;
  }

  /** The peer's RING: a write into our next slot, of a ring's description. */
  private String ring(WcOpcode opcode, int byteLength, int imm, long ourWrites) {
    if (opcode != WcOpcode.RECV_RDMA_WITH_IMM || byteLength != Wire.Ring.LENGTH) {
      return "a RING on " + (opcode == WcOpcode.RECV ? "a SEND" : "an RDMA WRITE") + " of "
          + unsigned(byteLength) + " bytes: a RING is an RDMA WRITE of " + Wire.Ring.LENGTH;
    }
    if (peerRingUnacked) return "a second RING before we acknowledged its first";
    if (written >= granted) {
      return "more writes than the credits we gave: its RING, write #" + (written + 1) + " with "
          + granted + " granted";
    }
    written++;
    peerRingUnacked = true;
    return credits(Wire.credits(imm), ourWrites);
  }

  private String control(WcOpcode opcode, int byteLength, int imm, long ourWrites) {
    if (opcode != WcOpcode.RECV || byteLength != 0) {
      return "a control immediate " + hex(imm) + " on " + (opcode == WcOpcode.RECV ? "a SEND"
          : "an RDMA WRITE") + " of " + unsigned(byteLength)
          + " bytes: control messages are zero-length SENDs";
    }
    int field = Wire.credits(imm);
    switch (Wire.code(imm)) {
      case Wire.CREDIT:
        return field == 0 ? "a CREDIT returning no credits" : credits(field, ourWrites);
      case Wire.FIN:
        if (fin) return "a second FIN";
        if (midMessage && !stoppedReading) {
          return "a FIN in the middle of a message (after a MORE write)";
        }
        fin = true;
        return credits(field, ourWrites);
      case Wire.FIN_ACK:
        if (!finSent) return "a FIN_ACK before our FIN";
        if (finAck) return "a second FIN_ACK";
        finAck = true;
        return credits(field, ourWrites);
      case Wire.RING_ACK:
        if (announced == null) return "a RING_ACK with no RING of ours to acknowledge";
        // its writes into our old ring are all in; the new ring's slots are all free
        granted = written + announced.slots();
        slotSize = announced.slotSize();
        announced = null;
        return credits(field, ourWrites);
      case Wire.CANCEL:
        if (cancel) return "a second CANCEL";
        if (ourWrites < WRAP && field > ourWrites) {
          return "a CANCEL saying it took " + field + " of our writes, when it was sent "
              + ourWrites + " of ours";
        }
        cancel = true;
        return null;
      default:
        return "unknown control code " + Wire.code(imm) + " in immediate " + hex(imm);
    }
  }

  private String credits(int n, long ourWrites) {
    if (n > ourWrites - returned) {
      return "it returned " + n + " credits, but only " + (ourWrites - returned)
          + " of our writes were not credited yet";
    }
    returned += n;
    return null;
  }

  private static String hex(int imm) {
    return String.format("0x%08x", imm);
  }

  private static long unsigned(int n) {
    return n & 0xFFFFFFFFL;
  }
}
