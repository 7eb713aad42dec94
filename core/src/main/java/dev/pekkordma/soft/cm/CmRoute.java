package dev.pekkordma.soft.cm;

import static dev.pekkordma.verbs.RdmaException.EHOSTUNREACH;
import static dev.pekkordma.verbs.RdmaException.ENETUNREACH;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.concurrent.ConcurrentLinkedDeque;

/** Where a destination is, and the local address the kernel's routes reach it from. */
record CmRoute(InetSocketAddress target, InetAddress source) {
  /**
   * Unbound probes, kept for the next lookup: a connect looks the route up afresh each time, and
   * a new socket cost several times the lookup.
   */
  private static final ConcurrentLinkedDeque<DatagramSocket> PROBES = new ConcurrentLinkedDeque<>();
  private static final int MAX_PROBES = 4;
  /** The port a probe connects to when the destination has none: any number routes alike. */
  private static final int DISCARD = 9;

  /** No route: {@code errno} is what the ADDR_ERROR event carries, negated. */
  static final class Unreachable extends Exception {
    final int errno;

    Unreachable(int errno) {
      super(null, null, false, false);
      this.errno = errno;
    }
  }

  /** Resolves {@code destination}'s name, then the route from {@code from} (any when null). */
  static CmRoute find(InetAddress from, InetSocketAddress destination) throws Unreachable {
    InetSocketAddress target;
    try {
      target = destination.isUnresolved()
          ? new InetSocketAddress(InetAddress.getByName(destination.getHostString()),
              destination.getPort())
          : destination;
    } catch (UnknownHostException e) {
      throw new Unreachable(EHOSTUNREACH);
    }
    // connecting a datagram socket picks the route and source address; it sends nothing
    boolean any = from == null || from.isAnyLocalAddress();
    DatagramSocket probe = any ? PROBES.pollFirst() : null;
    try {
      if (probe == null) {
        probe = any ? new DatagramSocket() : new DatagramSocket(new InetSocketAddress(from, 0));
      }
      // the route does not depend on the port, and a socket cannot connect to port 0 (a group's)
      probe.connect(target.getPort() == 0 ? new InetSocketAddress(target.getAddress(), DISCARD)
          : target);
      CmRoute route = new CmRoute(target, probe.getLocalAddress());
      if (any) {
        probe.disconnect(); // unbinds the source address it took: the next connect picks again
        if (PROBES.size() < MAX_PROBES && PROBES.offerFirst(probe)) probe = null;
      }
      return route;
    } catch (IOException | RuntimeException e) {
      throw new Unreachable(ENETUNREACH);
    } finally {
      if (probe != null) probe.close();
    }
  }
}
