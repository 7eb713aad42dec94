package dev.pekkordma.streams;

import java.net.InetSocketAddress;
import org.apache.pekko.util.ByteString;

/**
 * One unreliable datagram, as Alpakka's UDP {@code Datagram}: its bytes and its peer (where it
 * goes, or where it came from). At most the path MTU of bytes.
 */
public record Datagram(ByteString data, DatagramPeer peer) {
  public Datagram {
    if (data == null || peer == null) throw new IllegalArgumentException("data or peer is null");
  }

  public static Datagram create(ByteString data, InetSocketAddress to) {
    return new Datagram(data, DatagramPeer.at(to));
  }

  /** The same peer with other bytes: an answer to a received datagram. */
  public Datagram withData(ByteString other) {
    return new Datagram(other, peer);
  }

  /** The peer's address, or null where it is not known. */
  public InetSocketAddress remote() {
    return peer.address();
  }
}
