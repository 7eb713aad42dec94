package dev.pekkordma.soft.cm;

import java.net.InetSocketAddress;
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
