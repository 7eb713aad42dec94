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
 * 1..4   grant     int, big-endian
 * 5..8   channel   int (0 for CREDIT)
 * 9..    message   DATA only
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
  record Frame(byte kind, int grant, int channel, ByteString message) {}

  /** Parses {@code length} bytes of {@code b}; fails naming what is wrong. */
  static Frame read(Buffer b, int length) {
    if (length < HEADER) {
      throw new IllegalArgumentException("a frame of " + length + " bytes is shorter than its "
          + HEADER + "-byte header");
    }
    byte[] bytes = b.bytes(length);
    ByteBuffer v = ByteBuffer.wrap(bytes);
    byte kind = v.get();
    int grant = v.getInt();
    int channel = v.getInt();
    if (grant < 0) throw new IllegalArgumentException("a frame grants " + grant + " credits");
    if (kind == DATA) {
      return new Frame(kind, grant, channel,
          ByteString.fromArrayUnsafe(bytes, HEADER, length - HEADER));
    }
    if (kind == CREDIT) return new Frame(kind, grant, channel, null);
    throw new IllegalArgumentException("unknown frame kind " + kind);
  }
}
