package dev.pekkordma.soft;

import dev.pekkordma.config.RdmaSettings.SoftSettings;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.AtomicCapability;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.LinkLayer;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.RdmaDevice;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One software RDMA device: what the hardware would hold. Its memory keys and QP numbers are
 * device-wide, as on a NIC; its engine thread plays the NIC's send pipeline.
 */
final class SoftDevice {
  final SoftProvider provider;
  final RdmaDevice info;
  final SoftSettings settings;
  final Gid gid;
  /** This device's number in the JVM: its GID's last two bytes. */
  final int serial;
  final KeyTable<Object> memoryKeys; // SoftMr and SoftMw by lkey/rkey
  final KeyTable<SoftQp> qps;
  final KeyTable<Object> handles; // what SendRequests names by handle: MRs, MWs, AHs
  final SoftEngine engine;
  final LocalPeer localPeer;
  /** Port 1's traffic and error counts since the device came up. */
  final PortTally portTally = new PortTally();
  final List<SoftContext> contexts = new CopyOnWriteArrayList<>();
  /** One per CM id on the device: a set, as thousands come and go. */
  final Set<Runnable> removalListeners = ConcurrentHashMap.newKeySet();
  private volatile PortState portState = PortState.ACTIVE;
  private volatile boolean fatal;
  /** Bumped by each fatal error: contexts opened before it stay dead. */
  private volatile int incarnation;

  SoftDevice(SoftProvider provider, String name, int serial, Gid gid, long guid) {
    this.provider = provider;
    this.serial = serial;
    this.settings = provider.settings();
    this.gid = gid;
    this.info = new RdmaDevice(name, guid, "soft-roce", "soft");
    this.memoryKeys = new KeyTable<>(64, settings.maxMr + settings.maxMw, 32, 8,
        "memory regions and windows");
    this.qps = new KeyTable<>(64, Math.min(settings.maxQp, 65535), 24, 0, "QPs");
    this.handles = new KeyTable<>(64, 1 << 23, 32, 8, "handles");
    this.engine = new SoftEngine("soft-rdma-engine-" + engineName(name, gid),
        Math.min(settings.maxQp, 65535));
    this.localPeer = new LocalPeer(this);
  }

  /** The engine thread's name: the device name and its fabric serial (unique in the JVM). */
  static String engineName(String name, Gid gid) {
    return name + "#" + (((gid.byteAt(14) & 0xff) << 8) | (gid.byteAt(15) & 0xff));
  }

  DeviceAttributes attributes() {
    SoftSettings s = settings;
    return new DeviceAttributes("pekko-rdma soft 1", info.guid(), s.maxMrSize, s.maxQp, s.maxQpWr,
        s.maxSge, s.maxCq, s.maxCqe, s.maxMr, s.maxPd, s.maxMw, s.maxSrq, s.maxSrqWr, s.maxSge,
        s.maxQpRdAtom, s.maxQpRdAtom, s.maxInlineData, AtomicCapability.HCA, 1);
  }

  Mtu mtu() {
    for (Mtu m : Mtu.values()) if (m.bytes == settings.mtu) return m;
    return Mtu.MTU_4096;
  }

  PortAttributes port() {
    Mtu mtu = mtu();
    return new PortAttributes(portState, mtu, mtu, 1, 0, LinkLayer.ETHERNET, settings.maxMsgSize);
  }

  boolean portActive() {
    return portState == PortState.ACTIVE && !fatal;
  }

  boolean isFatal() {
    return fatal;
  }

  void setPortActive(boolean active) {
    portState = active ? PortState.ACTIVE : PortState.DOWN;
    raiseToAll(AsyncEvent.ofPort(active ? AsyncEventType.PORT_ACTIVE : AsyncEventType.PORT_ERR, 1));
  }

  int incarnation() {
    return incarnation;
  }

  /** The device is back: the port comes up, new contexts work. */
  void restore() {
    if (!fatal) return;
    fatal = false;
    setPortActive(true);
  }

  void deviceFatal() {
    incarnation++;
    fatal = true;
    portState = PortState.DOWN;
    raiseToAll(AsyncEvent.ofDevice(AsyncEventType.DEVICE_FATAL));
    for (SoftContext c : contexts) c.allQpsToError();
    for (Runnable r : removalListeners) r.run();
  }

  void raiseToAll(AsyncEvent e) {
    for (SoftContext c : contexts) c.raise(e);
  }

  void close() {
    engine.stop();
    SoftFabric.get().unregister(this);
  }
}
