package dev.pekkordma.cm;

import java.net.Inet6Address;
import java.net.InetSocketAddress;

/** How pekko-rdma writes a socket address in what it says: one form everywhere. */
public final class SocketAddresses {
  private SocketAddresses() {}

  /**
   * {@code host:port}: the host by its numeric address (an IPv6 one in brackets), an unresolved
   * address by its name; "?" for null.
   */
  public static String format(InetSocketAddress a) {
    if (a == null) return "?";
    if (a.getAddress() == null) return a.getHostString() + ":" + a.getPort();
    String host = a.getAddress().getHostAddress();
    return (a.getAddress() instanceof Inet6Address ? "[" + host + "]" : host) + ":" + a.getPort();
  }
}
