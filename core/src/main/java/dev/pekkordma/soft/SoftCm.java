package dev.pekkordma.soft;

import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.soft.cm.CmResources;
import dev.pekkordma.soft.cm.SoftCmEventChannel;
import dev.pekkordma.soft.cm.SoftCmSupport;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.RdmaException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The provider's side of the software connection manager: shared contexts and bookkeeping. */
final class SoftCm implements SoftCmSupport {
  private final SoftProvider provider;
  private final Map<SoftDevice, SoftContext> shared = new HashMap<>();
  private final Map<SoftContext, Integer> references = new HashMap<>();
  private final List<SoftCmEventChannel> channels = new ArrayList<>();
  private final CmResources resources;

  SoftCm(SoftProvider provider) {
    this.provider = provider;
    // TLS is set up here, at the provider's start, so a broken store fails it at once
    this.resources = new CmResources(provider.allSettings());
  }

  boolean available() {
    return true;
  }

  synchronized CmEventChannel createEventChannel() {
    channels.removeIf(SoftCmEventChannel::isClosed);
    SoftCmEventChannel c = new SoftCmEventChannel(this);
    channels.add(c);
    return c;
  }

  /** At provider close: every id and channel goes, as when a process exits. */
  void shutdown() {
    List<SoftCmEventChannel> open;
    synchronized (this) {
      open = new ArrayList<>(channels);
      channels.clear();
    }
    for (SoftCmEventChannel c : open) c.shutdown();
    resources.shutdown();
  }

  @Override
  public synchronized DeviceContext acquireContext(InetAddress local) {
    SoftDevice device = provider.softDevices().get(0);
    if (device.isFatal()) {
      // as the kernel's CM finds no device for the address once it is gone
      throw new RdmaException("rdma_cm", RdmaException.ENODEV, "device " + device.info.name()
          + " serving " + local.getHostAddress() + " was removed (DEVICE_FATAL)");
    }
    SoftContext c = shared.get(device);
    if (c == null || c.isClosed() || c.isStale()) {
      c = (SoftContext) provider.open(device.info);
      shared.put(device, c);
    }
    references.merge(c, 1, Integer::sum);
    return c;
  }

  @Override
  public synchronized void releaseContext(DeviceContext context) {
    Integer n = references.get(context);
    if (n == null) return;
    if (n > 1) {
      references.put((SoftContext) context, n - 1);
      return;
    }
    references.remove(context);
    shared.values().remove(context);
    // librdmacm keeps its contexts while the user's PDs live on them: close with the last one
    ((SoftContext) context).closeWhenEmpty();
  }

  @Override
  public Gid gid(DeviceContext context) {
    return context.queryGid(1, 0);
  }

  @Override
  public boolean portActive(DeviceContext context) {
    return ((SoftContext) context).device.portActive();
  }

  @Override
  public AutoCloseable onDeviceRemoval(DeviceContext context, Runnable onRemoval) {
    SoftDevice device = ((SoftContext) context).device;
    device.removalListeners.add(onRemoval);
    if (device.isFatal()) onRemoval.run(); // the device died before this id came
    return () -> device.removalListeners.remove(onRemoval);
  }

  @Override
  public void countCmId(int delta) {
    provider.counters.cmIds.addAndGet(delta);
  }

  @Override
  public Duration connectTimeout() {
    return provider.allSettings().cmConnectTimeout();
  }

  @Override
  public CmResources cmResources() {
    return resources;
  }

  @Override
  public void attachMulticast(dev.pekkordma.verbs.QueuePair qp, Gid mgid) {
    ((SoftQp) qp).attachMulticast(mgid);
  }

  @Override
  public void detachMulticast(dev.pekkordma.verbs.QueuePair qp, Gid mgid) {
    ((SoftQp) qp).detachMulticast(mgid);
  }
}
