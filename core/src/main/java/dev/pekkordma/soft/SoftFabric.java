package dev.pekkordma.soft;

import dev.pekkordma.config.RdmaSettings;
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
  private volatile SoftDevice[] bySerial = new SoftDevice[16];
  private volatile long maxMessage;
  private volatile TcpFabric tcp;
  /** The multicast groups of every device of this JVM. */
  final SoftMulticast multicast = new SoftMulticast();

  static SoftFabric get() {
    return INSTANCE;
  }

  /** Starts the TCP side on first use (later providers share it, whatever their config says). */
  synchronized TcpFabric tcp(RdmaSettings settings) {
    if (tcp == null) tcp = TcpFabric.start(settings, this);
    return tcp;
  }

  /** The TCP side, once a provider started it. */
  TcpFabric tcp() {
    return tcp;
  }

  /** A new device's serial in this JVM (1 to 65535; its GID's last two bytes). */
  int newSerial() {
    int serial = serials.incrementAndGet();
    if (serial > 0xffff) {
      throw new IllegalStateException("this JVM opened 65535 soft devices already");
    }
    return serial;
  }

  Gid gid(TcpFabric fabric, int serial) {
    return Gid.of(fabric.address().gid(serial));
  }

  synchronized void register(SoftDevice device) {
    local.put(device.gid, device);
    SoftDevice[] table = bySerial;
    if (device.serial >= table.length) {
      table = java.util.Arrays.copyOf(table, Math.max(device.serial + 1, table.length * 2));
    }
    table[device.serial] = device;
    bySerial = table;
    maxMessage = Math.max(maxMessage, device.settings.maxMsgSize);
  }

  synchronized void unregister(SoftDevice device) {
    local.remove(device.gid, device);
    SoftDevice[] table = bySerial;
    if (device.serial < table.length && table[device.serial] == device) {
      table[device.serial] = null;
      bySerial = table;
    }
    if (local.isEmpty()) multicast.shutdown();
  }

  /** The device of this JVM with {@code serial}, or null. */
  SoftDevice deviceBySerial(int serial) {
    SoftDevice[] table = bySerial;
    return serial > 0 && serial < table.length ? table[serial] : null;
  }

  /** The largest message any device of this JVM takes (max-msg-size). */
  long maxMessage() {
    return maxMessage;
  }

  /** How to reach the device with this GID. */
  SoftPeer route(Gid gid) {
    if (SoftMulticast.isMulticast(gid)) return multicast;
    SoftDevice d = local.get(gid);
    if (d != null) return d.localPeer;
    if (gid.byteAt(0) == (byte) 0xfe && gid.byteAt(1) == (byte) 0x80 && tcp != null) {
      return tcp.peer(gid);
    }
    return UnreachablePeer.INSTANCE;
  }
}
