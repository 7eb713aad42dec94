package dev.pekkordma.cluster;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The private data of a connect request and of its accept (magic, version, uid), and of a
 * rejection (why, cut to what the CM carries).
 */
final class ConnectPrivateData {
  private static final byte[] MAGIC = {'P', 'R', 'D', 'M'};
  static final int LENGTH = 13;
  /** Within the 148 bytes a reject carries (ConnectionParameters.MAX_REJECT_PRIVATE_DATA). */
  static final int MAX_REJECTION = 140;

  private ConnectPrivateData() {}

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

  /** Why a connection is rejected, as the rejection's private data. */
  static byte[] rejection(String why) {
    byte[] b = why.getBytes(StandardCharsets.UTF_8);
    return b.length <= MAX_REJECTION ? b : Arrays.copyOf(b, MAX_REJECTION);
  }
}
