package dev.pekkordma.soft.cm;

import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.List;

/**
 * The ports CM ids of this process hold (rdma_cm's RDMA_PS_TCP port space). The ids' sockets are
 * bound with SO_REUSEADDR, so that a bound id can later listen on its port, which also lets the
 * kernel hand one port to two of our ids: this table refuses that, as rdma_bind_addr does. Other
 * processes' listeners are refused by the kernel.
 */
final class PortSpace {
  private static final Map<Integer, List<InetSocketAddress>> HELD = new HashMap<>();

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

  /** Where {@link #allocate} looks for a free port next: the dynamic range, 49152 to 65535. */
  private static int nextEphemeral = 49152;

  /**
   * Takes {@code address}'s port, or a free one of the dynamic range when it is 0, in this
   * process's table only: an active id's port names its end of a connection (the peer's
   * CONNECT_REQUEST reports it) and holds no socket, as its connection rides a shared link.
   * Fails for {@code verb} with EADDRINUSE when taken, or when the range is full.
   */
  static synchronized InetSocketAddress allocate(String verb, InetSocketAddress address) {
    if (address.getPort() != 0) {
      InetSocketAddress holder = take(address);
      if (holder != null) {
        throw new RdmaException(verb, RdmaException.EADDRINUSE,
            address + " is in use: a CM id holds " + holder);
      }
      return address;
    }
    for (int tries = 0; tries < 65536 - 49152; tries++) {
      int port = nextEphemeral;
      nextEphemeral = port == 65535 ? 49152 : port + 1;
      InetSocketAddress a = new InetSocketAddress(address.getAddress(), port);
      if (take(a) == null) return a;
    }
    throw new RdmaException(verb, RdmaException.EADDRINUSE, "every port of 49152 to 65535 on "
        + address.getAddress().getHostAddress() + " is held by a CM id of this process");
  }

  /** Takes {@code address} (a concrete port), or returns the holder it conflicts with. */
  static synchronized InetSocketAddress take(InetSocketAddress address) {
    List<InetSocketAddress> onPort = HELD.computeIfAbsent(address.getPort(), p -> new ArrayList<>());
    for (InetSocketAddress h : onPort) {
      if (h.getAddress().equals(address.getAddress()) || h.getAddress().isAnyLocalAddress()
          || address.getAddress().isAnyLocalAddress()) {
        return h;
      }
    }
    onPort.add(address);
    return null;
  }

  static synchronized void release(InetSocketAddress address) {
    List<InetSocketAddress> onPort = HELD.get(address.getPort());
    if (onPort == null) return;
    onPort.remove(address);
    if (onPort.isEmpty()) HELD.remove(address.getPort());
  }
}
