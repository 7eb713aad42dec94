package dev.pekkordma.soft;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.config.RdmaSettings.SoftSettings;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.spi.FaultInjection;
import dev.pekkordma.verbs.spi.ResourceCounters;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The embedded software RDMA provider: verbs semantics with no hardware, devices of one JVM
 * talking in memory and devices of different processes over TCP.
 */
@InternalApi
public final class SoftProvider implements RdmaProvider, FaultInjection {
  final ResourceCounters counters = new ResourceCounters();
  private final SoftSettings settings;
  private final RdmaSettings all;
  private final List<SoftDevice> devices = new ArrayList<>();
  private final AtomicInteger objectNumbers = new AtomicInteger();
  private final ScheduledExecutorService timer;
  private final SoftCm cm;
  private volatile boolean closed;

  SoftProvider(RdmaSettings settings) {
    this.all = settings;
    this.settings = settings.soft();
    TcpFabric tcp = SoftFabric.get().tcp(settings);
    SoftFabric.get().multicast.configure(this.settings.fabricMulticastPort,
        hostOrNull(this.settings.fabricHost));
    for (String name : this.settings.devices) {
      int serial = SoftFabric.get().newSerial();
      var gid = SoftFabric.get().gid(tcp, serial);
      long guid = 0x0002c90300000000L | serial;
      SoftDevice d = new SoftDevice(this, name, serial, gid, guid);
      devices.add(d);
      SoftFabric.get().register(d);
    }
    timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "soft-rdma-timer");
      t.setDaemon(true);
      return t;
    });
    cm = new SoftCm(this);
  }

  private static java.net.InetAddress hostOrNull(String host) {
    try {
      return java.net.InetAddress.getByName(host);
    } catch (java.net.UnknownHostException e) {
      return null; // the fabric's start has said so already
    }
  }

  SoftSettings settings() {
    return settings;
  }

  RdmaSettings allSettings() {
    return all;
  }

  ScheduledExecutorService timer() {
    return timer;
  }

  int nextObjectNumber() {
    return objectNumbers.incrementAndGet();
  }

  List<SoftDevice> softDevices() {
    return devices;
  }

  @Override
  public String name() {
    return "soft";
  }

  @Override
  public List<RdmaDevice> devices() {
    List<RdmaDevice> list = new ArrayList<>();
    for (SoftDevice d : devices) list.add(d.info);
    return Collections.unmodifiableList(list);
  }

  @Override
  public List<PortCounters> portCounters(RdmaDevice device) {
    for (SoftDevice d : devices) {
      if (d.info.equals(device)) return List.of(d.portTally.snapshot());
    }
    return List.of();
  }

  @Override
  public DeviceContext open(RdmaDevice device) {
    checkOpen("ibv_open_device");
    if (device == null) throw new RdmaException("ibv_open_device", RdmaException.EINVAL, "device is null");
    for (SoftDevice d : devices) {
      if (d.info.equals(device)) {
        SoftContext c = new SoftContext(d);
        d.contexts.add(c);
        counters.contexts.incrementAndGet();
        return c;
      }
    }
    throw new RdmaException("ibv_open_device", RdmaException.ENODEV,
        device + " is not a device of this provider; devices: " + devices());
  }

  @Override
  public CmEventChannel createCmEventChannel() {
    checkOpen("rdma_create_event_channel");
    return cm.createEventChannel();
  }

  @Override
  public boolean supports(Feature feature) {
    return feature != Feature.CONNECTION_MANAGER || cm.available();
  }

  @Override
  public ResourceCounts liveResources() {
    return counters.snapshot();
  }

  @Override
  public void setPortState(DeviceContext context, int port, boolean active) {
    soft(context).device.setPortActive(active);
  }

  @Override
  public void deviceFatal(DeviceContext context) {
    soft(context).device.deviceFatal();
  }

  @Override
  public void restoreDevice(DeviceContext context) {
    soft(context).device.restore();
  }

  @Override
  public void qpFatal(QueuePair qp) {
    if (!(qp instanceof SoftQp)) throw new IllegalArgumentException("not a software QP: " + qp);
    ((SoftQp) qp).fatal(null);
  }

  private SoftContext soft(DeviceContext context) {
    if (!(context instanceof SoftContext)) {
      throw new IllegalArgumentException("not a software device context: " + context);
    }
    return (SoftContext) context;
  }

  private void checkOpen(String verb) {
    if (closed) throw new RdmaException(verb, RdmaException.EINVAL, "the soft provider is closed");
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    cm.shutdown();
    for (SoftDevice d : devices) d.close();
    timer.shutdownNow();
  }
}
