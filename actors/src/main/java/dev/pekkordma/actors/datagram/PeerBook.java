package dev.pekkordma.actors.datagram;

import dev.pekkordma.verbs.Gid;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What an endpoint knows of its peers, each map at most {@code max} entries (the least recently
 * used goes): where each resolved address's datagrams go, and which address a sender (GID and
 * QPN) listens on, from the hellos of the SIDR exchanges.
 */
final class PeerBook {
  record Key(Gid gid, int qpn) {}

  private final Map<InetSocketAddress, SendPath.Target> routes;
  private final Map<Key, InetSocketAddress> addresses;

  PeerBook(int max) {
    routes = bounded(max);
    addresses = bounded(max);
  }

  private static <K, V> Map<K, V> bounded(int max) {
    return new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > max;
      }
    };
  }

  SendPath.Target route(InetSocketAddress to) {
    return routes.get(to);
  }

  void route(InetSocketAddress to, SendPath.Target target) {
    routes.put(to, target);
  }

  int routes() {
    return routes.size();
  }

  void knownAt(Gid gid, int qpn, InetSocketAddress address) {
    addresses.put(new Key(gid, qpn), address);
  }

  /** The sender as a {@link Peer}, with its address if known. */
  Peer peer(Gid gid, int qpn) {
    return new Peer(gid, qpn, addresses.get(new Key(gid, qpn)));
  }
}
