package dev.pekkordma.actors.datagram;

import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.verbs.Gid;
import java.net.InetSocketAddress;

/**
 * Who sent a datagram: the source GID of its GRH and the source QP number of its completion,
 * which is enough to answer it ({@link DatagramEndpoint.Reply}). {@code address} is the peer's
 * endpoint address when this side knows it (it resolved the peer, or the peer resolved this
 * endpoint and said where it listens); null otherwise.
 */
public record Peer(Gid gid, int qpn, InetSocketAddress address) {
  @Override
  public String toString() {
    return (address != null ? SocketAddresses.format(address) + " " : "") + "(GID " + gid + ", QP 0x" + Integer.toHexString(qpn) + ")";
  }
}
