package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.runtime.internal.datagram.DatagramFormat;
import dev.pekkordma.runtime.internal.datagram.PeerKey;
import dev.pekkordma.streams.DatagramPeer;
import dev.pekkordma.verbs.Gid;
import java.net.InetSocketAddress;
import java.util.function.Function;

/**
 * The peers received datagrams came from, so that a datagram from a known sender allocates no
 * {@link DatagramPeer}: a direct-mapped table by GID and QPN (a collision replaces), each with
 * the address the sender said it listens on, as the endpoint knows it.
 */
final class Senders {
  private final long[] his;
  private final long[] los;
  private final int[] qpns;
  private final DatagramPeer[] peers;
  private final int mask;
  private final Function<PeerKey, InetSocketAddress> addresses;

  /** A table for {@code max} peers, their addresses from {@code addresses}. */
  Senders(int max, Function<PeerKey, InetSocketAddress> addresses) {
    int size = Integer.highestOneBit(Math.max(2, max) * 2 - 1) << 1;
    his = new long[size];
    los = new long[size];
    qpns = new int[size];
    peers = new DatagramPeer[size];
    mask = size - 1;
    this.addresses = addresses;
  }

  /** The sender with source GID {@code hi:lo} (big-endian halves) and QP {@code qpn}. */
  DatagramPeer peer(long hi, long lo, int qpn) {
    int i = index(hi, lo, qpn);
    DatagramPeer p = peers[i];
    if (p != null && his[i] == hi && los[i] == lo && qpns[i] == qpn) return p;
    Gid gid = DatagramFormat.gid(hi, lo);
    p = new DatagramPeer(addresses.apply(new PeerKey(gid, qpn)), gid, qpn);
    his[i] = hi;
    los[i] = lo;
    qpns[i] = qpn;
    peers[i] = p;
    return p;
  }

  /** Where sender {@code key} listens was just learned: it is looked up again. */
  void forget(PeerKey key) {
    byte[] b = key.gid().toBytes();
    long hi = 0;
    long lo = 0;
    for (int k = 0; k < 8; k++) {
      hi = hi << 8 | (b[k] & 0xff);
      lo = lo << 8 | (b[8 + k] & 0xff);
    }
    peers[index(hi, lo, key.qpn())] = null;
  }

  private int index(long hi, long lo, int qpn) {
    long h = hi * 0x9E3779B97F4A7C15L ^ lo * 0xC2B2AE3D27D4EB4FL ^ qpn * 0x165667B1L;
    return (int) (h ^ h >>> 29) & mask;
  }
}
