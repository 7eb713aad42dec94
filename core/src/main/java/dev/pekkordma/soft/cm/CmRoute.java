package dev.pekkordma.soft.cm;

import static dev.pekkordma.verbs.RdmaException.EHOSTUNREACH;
import static dev.pekkordma.verbs.RdmaException.ENETUNREACH;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/** Where a destination is, and the local address the kernel's routes reach it from. */
record CmRoute(InetSocketAddress target, InetAddress source) {
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
    try (DatagramSocket probe = from == null || from.isAnyLocalAddress() ? new DatagramSocket()
        : new DatagramSocket(new InetSocketAddress(from, 0))) {
      probe.connect(target);
      return new CmRoute(target, probe.getLocalAddress());
    } catch (IOException | RuntimeException e) {
      throw new Unreachable(ENETUNREACH);
    }
  }
}
