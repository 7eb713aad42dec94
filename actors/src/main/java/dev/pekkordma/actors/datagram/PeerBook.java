package dev.pekkordma.actors.datagram;

import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.runtime.internal.datagram.PeerKey;
import dev.pekkordma.runtime.internal.datagram.PeerRoutes;
import dev.pekkordma.runtime.internal.datagram.UdTarget;
import dev.pekkordma.verbs.Gid;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What an endpoint knows of its peers, each map at most {@code max} entries (the least recently
 * used goes): where each resolved address's datagrams go (for at most {@code ttl}: {@link
 * PeerRoutes}), and which address a sender (GID and QPN) listens on, from the hellos of the SIDR
 * exchanges.
 */
final class PeerBook {
  private final PeerRoutes<UdTarget> routes;
  private final Map<PeerKey, InetSocketAddress> addresses;

  PeerBook(int max, Duration ttl) {
    routes = new PeerRoutes<>(max, ttl);
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

  UdTarget route(InetSocketAddress to) {
    return routes.get(to);
  }

  void route(InetSocketAddress to, UdTarget target) {
    routes.put(to, target);
  }

  int routes() {
    return routes.size();
  }

  void knownAt(Gid gid, int qpn, InetSocketAddress address) {
    addresses.put(new PeerKey(gid, qpn), address);
  }

  /** The sender as a {@link Peer}, with its address if known. */
  Peer peer(Gid gid, int qpn) {
    return new Peer(gid, qpn, addresses.get(new PeerKey(gid, qpn)));
  }

  /** Why sends to {@code to} fail: it did not resolve, for {@code why}. */
  static String cannotResolve(InetSocketAddress to, String why) {
    return "cannot resolve datagram peer " + SocketAddresses.format(to) + ": " + why;
  }
}
