package dev.pekkordma.cluster;

import dev.pekkordma.actors.Buffer;
import java.nio.ByteBuffer;
import org.apache.pekko.util.ByteString;

/**
 * One RDMA SEND is one frame: a kind byte, the credits it grants (receives its sender has posted
 * since it last said so), and for data the channel and the message's bytes.
 *
 * <pre>
 * 0      kind      1 = DATA, 2 = CREDIT
 * 1..4   grant     int, big-endian, at least 0
 * 5..8   channel   int (0 for CREDIT)
 * 9..    message   DATA only: a credit frame is the header alone
 * </pre>
 */
final class Frames {
  static final int HEADER = 9;
  static final byte DATA = 1;
  static final byte CREDIT = 2;

  private Frames() {}

  /** Writes a data frame into {@code b}; returns its length. */
  static int writeData(Buffer b, int grant, int channel, ByteString message) {
    ByteBuffer v = b.view(0, HEADER + message.size());
    v.put(DATA).putInt(grant).putInt(channel);
    message.copyToBuffer(v);
    return HEADER + message.size();
  }

  /** Writes a credit frame into {@code b}; returns its length. */
  static int writeCredit(Buffer b, int grant) {
    b.view(0, HEADER).put(CREDIT).putInt(grant).putInt(0);
    return HEADER;
  }

  /** A frame that arrived: {@code message} is null for credit frames. */
  record ArrivedFrame(byte kind, int grant, int channel, ByteString message) {}

  /**
   * Parses a frame of {@code length} bytes, as a receive completion reports it, at the start of
   * {@code receive} (the whole receive buffer, from its position). Every field is checked before
   * anything is copied; only a data frame's message is.
   */
  static ArrivedFrame read(ByteBuffer receive, int length) throws ProtocolViolation {
    int capacity = receive.remaining();
    if (length < HEADER) {
      throw new ProtocolViolation("a frame of " + length + " bytes is shorter than its "
          + HEADER + "-byte header");
    }
    if (length > capacity) {
      throw new ProtocolViolation("a frame of " + length + " bytes is longer than the "
          + capacity + "-byte receive buffer");
    }
    int at = receive.position();
    byte kind = receive.get(at);
    int grant = receive.getInt(at + 1);
    int channel = receive.getInt(at + 5);
    if (kind != DATA && kind != CREDIT) {
      throw new ProtocolViolation("unknown frame kind " + kind);
    }
    if (grant < 0) throw new ProtocolViolation("a frame grants " + grant + " credits");
    if (kind == CREDIT) {
      if (length != HEADER || channel != 0) {
        throw new ProtocolViolation("a credit frame of " + length + " bytes for channel "
            + channel + " (a credit frame is the " + HEADER + "-byte header, channel 0)");
      }
      return new ArrivedFrame(kind, grant, 0, null);
    }
    byte[] message = new byte[length - HEADER];
    receive.get(at + HEADER, message);
    return new ArrivedFrame(kind, grant, channel, ByteString.fromArrayUnsafe(message));
  }
}
