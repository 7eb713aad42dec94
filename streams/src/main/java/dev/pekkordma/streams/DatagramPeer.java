package dev.pekkordma.streams;

import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.verbs.Gid;
import java.net.InetSocketAddress;

/**
 * The other end of a {@link Datagram}. To send, name an {@code address} (it is resolved once,
 * by the CM's SIDR exchange) or answer a received datagram's peer as it came. A received
 * datagram's peer has the source GID of its GRH and the QP number it came from, and its address
 * when known: the sender is a peer this side resolved, or one that resolved this side and said
 * where it listens.
 */
public record DatagramPeer(InetSocketAddress address, Gid gid, int qpn) {
  /** The endpoint at {@code address}. */
  public static DatagramPeer at(InetSocketAddress address) {
    if (address == null) throw new IllegalArgumentException("address is null");
    return new DatagramPeer(address, null, 0);
  }

  /** Whether the QP is known, so a datagram goes without resolving. */
  public boolean hasQp() {
    return gid != null;
  }

  @Override
  public String toString() {
    return (address != null ? SocketAddresses.format(address) : "")
        + (gid != null ? (address != null ? " " : "") + "(GID " + gid + ", QP 0x"
            + Integer.toHexString(qpn) + ")" : "");
  }
}
