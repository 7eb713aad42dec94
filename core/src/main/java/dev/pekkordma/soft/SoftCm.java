package dev.pekkordma.soft;

import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.RdmaException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** The provider's side of the software connection manager: shared contexts and bookkeeping. */
final class SoftCm implements SoftCmSupport {
  private final SoftProvider provider;
  private final Map<SoftDevice, SoftContext> shared = new HashMap<>();
  private final Map<SoftContext, Integer> references = new HashMap<>();

  SoftCm(SoftProvider provider) {
    this.provider = provider;
  }

  boolean available() {
    return false;
  }

  CmEventChannel createEventChannel() {
    throw new RdmaException("rdma_create_event_channel", RdmaException.EOPNOTSUPP,
        "the soft connection manager is not built yet");
  }

  @Override
  public synchronized DeviceContext acquireContext(InetAddress local) {
    SoftDevice device = provider.softDevices().get(0);
    SoftContext c = shared.get(device);
    if (c == null || c.isClosed()) {
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
    context.close();
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
}
