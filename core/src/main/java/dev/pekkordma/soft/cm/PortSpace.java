package dev.pekkordma.soft.cm;

import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * The ports CM ids of this process hold (rdma_cm's RDMA_PS_TCP port space). The ids' sockets are
 * bound with SO_REUSEADDR, so that a bound id can later listen on its port, which also lets the
 * kernel hand one port to two of our ids: this table refuses that, as rdma_bind_addr does. Other
 * processes' listeners are refused by the kernel.
 */
final class PortSpace {
  private static final List<InetSocketAddress> HELD = new ArrayList<>();

  private PortSpace() {}

  /**
   * A socket bound to {@code address} whose port this table now holds; fails for {@code verb}
   * with EADDRINUSE when the kernel or one of our ids has the port.
   */
  static Socket bind(String verb, InetSocketAddress address) {
    Socket s = new Socket();
    try {
      s.setReuseAddress(true); // so that listen can open a server socket on the port later
      s.bind(address);
    } catch (IOException e) {
      CmSocket.closeQuietly(s);
      throw new RdmaException(verb, RdmaException.EADDRINUSE,
          address + " is in use: " + e.getMessage(), e);
    }
    InetSocketAddress bound = new InetSocketAddress(address.getAddress(), s.getLocalPort());
    InetSocketAddress holder = take(bound);
    if (holder != null) {
      CmSocket.closeQuietly(s);
      throw new RdmaException(verb, RdmaException.EADDRINUSE,
          bound + " is in use: a CM id holds " + holder);
    }
    return s;
  }

  /** Takes {@code address} (a concrete port), or returns the holder it conflicts with. */
  static synchronized InetSocketAddress take(InetSocketAddress address) {
    for (InetSocketAddress h : HELD) {
      if (h.getPort() == address.getPort()
          && (h.getAddress().equals(address.getAddress()) || h.getAddress().isAnyLocalAddress()
              || address.getAddress().isAnyLocalAddress())) {
        return h;
      }
    }
    HELD.add(address);
    return null;
  }

  static synchronized void release(InetSocketAddress address) {
    HELD.remove(address);
  }
}
