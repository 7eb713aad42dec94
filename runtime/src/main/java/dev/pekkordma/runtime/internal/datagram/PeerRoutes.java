package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Where a datagram endpoint's resolved peers are: at most {@code max} routes, the least recently
 * used going first, each kept for {@code ttl} from when it was learned. A peer that restarted
 * listens behind the same address with a new QP, and unreliable datagrams tell the sender
 * nothing of it: once its route is older than the TTL, the next send resolves it again instead of
 * going where the peer was for ever. A multicast group's route, which the join made, lasts.
 */
@InternalApi
public final class PeerRoutes<T> {
  private static final long LASTS = Long.MIN_VALUE;

  private record Route<T>(T target, long expires) {}

  private final Map<InetSocketAddress, Route<T>> routes;
  private final long ttlNanos;
  private final LongSupplier clock;

  public PeerRoutes(int max, Duration ttl) {
    this(max, ttl, System::nanoTime);
  }

  PeerRoutes(int max, Duration ttl, LongSupplier clock) {
    if (max < 1) throw new IllegalArgumentException("max must be at least 1, was " + max);
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("ttl must be positive, was " + ttl);
    }
    this.ttlNanos = ttl.toNanos();
    this.clock = clock;
    this.routes = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<InetSocketAddress, Route<T>> eldest) {
        return size() > max;
      }
    };
  }

  /** The route to {@code to}, or null: never resolved, dropped, or older than the TTL. */
  public T get(InetSocketAddress to) {
    Route<T> r = routes.get(to);
    if (r == null) return null;
    if (r.expires != LASTS && clock.getAsLong() - r.expires >= 0) {
      routes.remove(to);
      return null;
    }
    return r.target;
  }

  /** A route just learned (resolved, or from a peer that resolved us): kept for the TTL. */
  public void put(InetSocketAddress to, T target) {
    routes.put(to, new Route<>(target, clock.getAsLong() + ttlNanos));
  }

  /** A route that does not age: a multicast group's, from the join. */
  public void putLasting(InetSocketAddress to, T target) {
    routes.put(to, new Route<>(target, LASTS));
  }

  public int size() {
    return routes.size();
  }
}
