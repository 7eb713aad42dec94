package dev.pekkordma.cluster;

import org.apache.pekko.util.ByteString;

/**
 * Turns a channel's messages into bytes and back. Each message travels as one RDMA SEND, so its
 * encoding must fit {@link RdmaCluster#maxMessageSize()}.
 */
public interface Codec<T> {
  ByteString encode(T message);

  T decode(ByteString bytes);

  /** The bytes as they are. */
  static Codec<ByteString> bytes() {
    return Codecs.BYTES;
  }

  /** Strings as UTF-8. */
  static Codec<String> utf8() {
    return Codecs.UTF8;
  }
}
