package dev.pekkordma.nativeverbs;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.spi.ResourceCounters;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The verbs on libibverbs: real RDMA devices, hardware or Soft-RoCE. */
@InternalApi
public final class NativeProvider implements RdmaProvider {
  private static final Logger log = LoggerFactory.getLogger(NativeProvider.class);
  private final SysfsCounters sysfs = SysfsCounters.fromSystemProperty();
  final ResourceCounters live = new ResourceCounters();
  final Set<NativeDeviceContext> open = ConcurrentHashMap.newKeySet();
  /** Contexts librdmacm opened, by their ibv_context pointer. */
  final Map<Long, NativeDeviceContext> borrowed = new ConcurrentHashMap<>();
  final Set<NativeCmChannel> cmChannels = ConcurrentHashMap.newKeySet();
  private volatile Set<Feature> features;
  private volatile boolean closed;

  /** What each CQ, QP and SRQ created must leave of the process's memory mappings. */
  final MapHeadroom maps;

  public NativeProvider() {
    this(MapHeadroom.ofProcess(MapHeadroom.DEFAULT_RESERVE));
  }

  NativeProvider(MapHeadroom maps) {
    Verbs.ibv(); // fails now, with how to fix it, when libibverbs is missing
    this.maps = maps;
  }

  @Override
  public String name() {
    return "native";
  }

  /** One entry of ibv_get_device_list, read while the list is held. */
  record DeviceEntry(String name, long guid, int transport, String ibdevPath) {}

  static List<DeviceEntry> listDevices() {
    long list = Verbs.getDeviceList();
    if (list == 0) return List.of();
    try {
      List<DeviceEntry> out = new ArrayList<>();
      for (long p = list; ; p += Layout.POINTER_SIZE) {
        long dev = NativeMemory.getLong(p);
        if (dev == 0) break;
        out.add(new DeviceEntry(Verbs.deviceName(dev), Verbs.deviceGuid(dev),
            NativeMemory.getInt(dev + Layout.DEVICE_TRANSPORT_TYPE),
            cString(dev + Layout.DEVICE_IBDEV_PATH, Layout.DEVICE_IBDEV_PATH_MAX)));
      }
      return out;
    } finally {
      Verbs.freeDeviceList(list);
    }
  }

  static String cString(long address, int max) {
    byte[] b = new byte[max];
    int n = 0;
    while (n < max) {
      byte c = NativeMemory.getByte(address + n);
      if (c == 0) break;
      b[n++] = c;
    }
    return new String(b, 0, n, StandardCharsets.UTF_8);
  }

  static String transportName(int t) {
    switch (t) {
      case 0: return "InfiniBand";
      case 1: return "iWARP";
      case 2: return "usNIC";
      case 3: return "usNIC UDP";
      case 4: return "unspecified";
      default: return "unknown (" + t + ")";
    }
  }

  /** The kernel driver: the device's driver link, else the node description (rxe says "rxe"). */
  static String driverOf(String ibdevPath) {
    try {
      Path link = Path.of(ibdevPath, "device", "driver");
      if (Files.exists(link)) return link.toRealPath().getFileName().toString();
      Path desc = Path.of(ibdevPath, "node_desc");
      if (Files.isReadable(desc)) {
        String d = Files.readString(desc).trim();
        if (!d.isEmpty()) return d.split("\\s+")[0];
      }
    } catch (IOException | RuntimeException e) {
      // fall through
    }
    return "unknown";
  }

  @Override
  public List<RdmaDevice> devices() {
    checkOpen();
    List<RdmaDevice> out = new ArrayList<>();
    for (DeviceEntry e : listDevices()) {
      out.add(new RdmaDevice(e.name, e.guid, transportName(e.transport), driverOf(e.ibdevPath)));
    }
    return Collections.unmodifiableList(out);
  }

  @Override
  public List<PortCounters> portCounters(RdmaDevice device) {
    return sysfs.readAll(device.name());
  }

  @Override
  public DeviceContext open(RdmaDevice device) {
    checkOpen();
    long list = Verbs.getDeviceList();
    try {
      for (long p = list; list != 0; p += Layout.POINTER_SIZE) {
        long dev = NativeMemory.getLong(p);
        if (dev == 0) break;
        if (Verbs.deviceName(dev).equals(device.name())) {
          long ctx = Verbs.openDevice(dev, device.name());
          NativeDeviceContext c = new NativeDeviceContext(this, device, ctx, false);
          open.add(c);
          live.contexts.incrementAndGet();
          return c;
        }
      }
    } finally {
      Verbs.freeDeviceList(list);
    }
    throw new RdmaException("ibv_open_device", RdmaException.ENODEV,
        "no device named '" + device.name() + "'; devices: " + devices());
  }

  @Override
  public CmEventChannel createCmEventChannel() {
    checkOpen();
    NativeCmChannel c = new NativeCmChannel(this, Verbs.createEventChannel());
    cmChannels.add(c);
    return c;
  }

  /**
   * Contexts (librdmacm's) of devices that a DEVICE_REMOVAL event said are going. A device
   * without the kernel's disassociate support (rxe) is only removed once every context of it is
   * closed, librdmacm's too; librdmacm closes its own once no id uses it and it has re-read the
   * device list. So when nothing of ours uses them any more, the list is re-read.
   */
  private final Set<Long> removedContexts = ConcurrentHashMap.newKeySet();

  void deviceRemoved(long ibvContext) {
    if (ibvContext == 0) return;
    removedContexts.add(ibvContext);
    releaseRemovedDevices();
  }

  /** Lets librdmacm close removed devices' contexts once no id, PD or CQ of ours is on them. */
  synchronized void releaseRemovedDevices() {
    if (removedContexts.isEmpty()) return;
    for (long ctx : removedContexts) {
      NativeDeviceContext c = borrowed.get(ctx);
      if (c != null && !c.children.isEmpty()) return;
      for (NativeCmChannel ch : cmChannels) {
        for (NativeCmId id : ch.ids.values()) {
          if (id.verbsHandle() == ctx) return;
        }
      }
    }
    for (long ctx : removedContexts) {
      NativeDeviceContext c = borrowed.remove(ctx);
      if (c != null) c.forceClose(new ArrayList<>()); // nothing open on it: only forgets it
    }
    removedContexts.clear();
    Verbs.refreshCmDevices();
  }

  /** The context object for an ibv_context that librdmacm opened (shared by its ids). */
  NativeDeviceContext borrowedContext(long ibvContext) {
    return borrowed.computeIfAbsent(ibvContext, ptr -> {
      long dev = NativeMemory.getLong(ptr); // ibv_context.device
      RdmaDevice d = new RdmaDevice(Verbs.deviceName(dev), Verbs.deviceGuid(dev),
          transportName(NativeMemory.getInt(dev + Layout.DEVICE_TRANSPORT_TYPE)),
          driverOf(cString(dev + Layout.DEVICE_IBDEV_PATH, Layout.DEVICE_IBDEV_PATH_MAX)));
      return new NativeDeviceContext(this, d, ptr, true);
    });
  }

  @Override
  public boolean supports(Feature feature) {
    if (feature.isBehaviour()) return behaviour(feature);
    Set<Feature> f = features;
    if (f == null) {
      synchronized (this) {
        if (features == null) features = probeFeatures();
        f = features;
      }
    }
    return f.contains(feature);
  }

  private final java.util.Map<Feature, Boolean> behaviours =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * A device behaviour, found once (lazily, then cached) by {@link BehaviourProbes} on every
   * device in the list: true when all have it. Prints what it found.
   */
  private boolean behaviour(Feature feature) {
    Boolean known = behaviours.get(feature);
    if (known != null) return known;
    synchronized (behaviours) {
      known = behaviours.get(feature);
      if (known != null) return known;
      boolean all = true;
      StringBuilder seen = new StringBuilder();
      for (DeviceEntry e : listDevices()) {
        RdmaDevice d = new RdmaDevice(e.name, e.guid, transportName(e.transport), "");
        boolean has;
        try (DeviceContext c = open(d)) {
          has = BehaviourProbes.probe(c, feature);
        }
        seen.append(seen.length() == 0 ? "" : ", ").append(e.name).append(has ? " yes" : " no");
        all &= has;
      }
      log.info("probe {} ({}): {}", feature, feature.meaning(), seen);
      behaviours.put(feature, all);
      return all;
    }
  }

  /** The features every device in the list has. */
  private Set<Feature> probeFeatures() {
    List<DeviceEntry> devs = listDevices();
    if (devs.isEmpty()) return EnumSet.noneOf(Feature.class);
    EnumSet<Feature> all = EnumSet.allOf(Feature.class);
    if (!Verbs.rdmacmAvailable()) all.remove(Feature.CONNECTION_MANAGER);
    for (DeviceEntry e : devs) {
      RdmaDevice d = new RdmaDevice(e.name, e.guid, transportName(e.transport), "");
      try (NativeDeviceContext c = (NativeDeviceContext) open(d)) {
        all.retainAll(c.features(e.transport));
      }
    }
    return all;
  }

  @Override
  public ResourceCounts liveResources() {
    return live.snapshot();
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    List<RuntimeException> failures = new ArrayList<>();
    // CM QPs go through rdma_destroy_qp, then what was opened on librdmacm's contexts, then the
    // ids and channels, then the contexts this provider opened
    for (NativeCmChannel c : new ArrayList<>(cmChannels)) c.forceCloseQps(failures);
    for (NativeDeviceContext c : new ArrayList<>(borrowed.values())) c.forceClose(failures);
    for (NativeCmChannel c : new ArrayList<>(cmChannels)) c.forceClose(failures);
    for (NativeDeviceContext c : new ArrayList<>(open)) c.forceClose(failures);
    if (!failures.isEmpty()) {
      RuntimeException first = failures.get(0);
      for (int i = 1; i < failures.size(); i++) first.addSuppressed(failures.get(i));
      throw first;
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new RdmaException("provider", RdmaException.EINVAL, "the native provider is closed");
    }
  }

  @Override
  public String toString() {
    return "native provider (libibverbs)";
  }
}
