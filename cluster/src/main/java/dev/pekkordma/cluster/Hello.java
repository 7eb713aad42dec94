package dev.pekkordma.cluster;

import java.nio.ByteBuffer;
import java.util.Arrays;

/** The private data of a connect request and of its accept: magic, version, uid. */
final class Hello {
  private static final byte[] MAGIC = {'P', 'R', 'D', 'M'};
  static final int LENGTH = 13;

  private Hello() {}

  static byte[] of(long uid) {
    return ByteBuffer.allocate(LENGTH).put(MAGIC).put((byte) Endpoint.VERSION).putLong(uid)
        .array();
  }

  /**
   * The uid in a hello, or null when it is none of ours. Longer data is read for its prefix: the
   * IB CM pads private data with zeros.
   */
  static Long uid(byte[] data) {
    if (data == null || data.length < LENGTH) return null;
    ByteBuffer b = ByteBuffer.wrap(data);
    if (!Arrays.equals(data, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) return null;
    if (b.get(MAGIC.length) != Endpoint.VERSION) return null;
    return b.getLong(MAGIC.length + 1);
  }
}
