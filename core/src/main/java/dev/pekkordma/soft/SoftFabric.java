package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The JVM-wide switch between software devices. A device's GID says where it is: {@code
 * fe80::} then the IPv4 address and TCP port of its process's fabric listener, then a device
 * serial. Devices of this JVM are reached in memory; others over TCP.
 */
final class SoftFabric {
  private static final SoftFabric INSTANCE = new SoftFabric();
  private final Map<Gid, SoftDevice> local = new ConcurrentHashMap<>();
  private final AtomicInteger serials = new AtomicInteger();
  private volatile TcpFabric tcp;

  static SoftFabric get() {
    return INSTANCE;
  }

  /** Starts the TCP side on first use (later providers share it, whatever their config says). */
  synchronized TcpFabric tcp(String host, int port) {
    if (tcp == null) tcp = TcpFabric.start(host, port, this);
    return tcp;
  }

  Gid newGid(TcpFabric fabric) {
    int serial = serials.incrementAndGet();
    byte[] g = new byte[16];
    g[0] = (byte) 0xfe;
    g[1] = (byte) 0x80;
    byte[] ip = fabric.address().getAddress().getAddress();
    System.arraycopy(ip, 0, g, 8, 4);
    int port = fabric.address().getPort();
    g[12] = (byte) (port >>> 8);
    g[13] = (byte) port;
    g[14] = (byte) (serial >>> 8);
    g[15] = (byte) serial;
    return Gid.of(g);
  }

  void register(SoftDevice device) {
    local.put(device.gid, device);
  }

  void unregister(SoftDevice device) {
    local.remove(device.gid, device);
  }

  SoftDevice localDevice(Gid gid) {
    return local.get(gid);
  }

  /** How to reach the device with this GID. */
  SoftPeer route(Gid gid) {
    SoftDevice d = local.get(gid);
    if (d != null) return d.localPeer;
    if (gid.byteAt(0) == (byte) 0xfe && gid.byteAt(1) == (byte) 0x80 && tcp != null) {
      return tcp.peer(gid);
    }
    return UnreachablePeer.INSTANCE;
  }
}
