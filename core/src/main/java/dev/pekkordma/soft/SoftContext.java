package dev.pekkordma.soft;

import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.Checks;
import dev.pekkordma.verbs.spi.Described;
import dev.pekkordma.verbs.spi.OpenChildren;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

final class SoftContext extends Closeable implements DeviceContext {
  final SoftDevice device;
  private final LinkedBlockingQueue<AsyncEvent> events = new LinkedBlockingQueue<>();
  private final OpenChildren children = new OpenChildren();
  final Set<SoftQp> qps = ConcurrentHashMap.newKeySet();

  private final int incarnation;

  SoftContext(SoftDevice device) {
    this.device = device;
    this.incarnation = device.incarnation();
  }

  @Override
  public String describe() {
    return "context of " + device.info.name();
  }

  @Override
  public RdmaDevice device() {
    return device.info;
  }

  @Override
  public DeviceAttributes queryDevice() {
    checkOpen("ibv_query_device");
    return device.attributes();
  }

  @Override
  public PortAttributes queryPort(int port) {
    checkOpen("ibv_query_port");
    checkPort("ibv_query_port", port);
    return device.port();
  }

  @Override
  public Gid queryGid(int port, int index) {
    checkOpen("ibv_query_gid");
    checkPort("ibv_query_gid", port);
    if (index != 0) {
      throw new RdmaException("ibv_query_gid", RdmaException.EINVAL,
          "GID index " + index + " is outside the table of 1 entry on port 1");
    }
    return device.gid;
  }

  @Override
  public PortCounters queryPortCounters(int port) {
    // no verb of its own (sysfs on a NIC): a missing port fails as ibv_query_port does
    checkOpen("ibv_query_port");
    checkPort("ibv_query_port", port);
    return device.portTally.snapshot();
  }

  private void checkPort(String verb, int port) {
    if (port != 1) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "port " + port + " does not exist: " + device.info.name() + " has port 1");
    }
  }

  @Override
  public ProtectionDomain allocPd() {
    checkOpen("ibv_alloc_pd");
    checkAlive("ibv_alloc_pd");
    int live = device.provider.counters.pds.get();
    if (live >= device.settings.maxPd) {
      throw new RdmaException("ibv_alloc_pd", RdmaException.ENOMEM,
          "no more than " + device.settings.maxPd + " PDs (max_pd)");
    }
    SoftPd pd = new SoftPd(this, device.provider.nextObjectNumber());
    children.add(pd);
    device.provider.counters.pds.incrementAndGet();
    return pd;
  }

  @Override
  public CompletionChannel createCompletionChannel() {
    checkOpen("ibv_create_comp_channel");
    SoftCompletionChannel ch = new SoftCompletionChannel(this);
    children.add(ch);
    return ch;
  }

  @Override
  public CompletionQueue createCq(int cqe, CompletionChannel channel) {
    checkOpen("ibv_create_cq");
    checkAlive("ibv_create_cq");
    Checks.cqEntries(cqe, device.settings.maxCqe);
    if (device.provider.counters.cqs.get() >= device.settings.maxCq) {
      throw new RdmaException("ibv_create_cq", RdmaException.ENOMEM,
          "no more than " + device.settings.maxCq + " CQs (max_cq)");
    }
    SoftCompletionChannel ch = null;
    if (channel != null) {
      Checks.sameContext(channel instanceof SoftCompletionChannel c && c.context == this,
          "ibv_create_cq");
      ch = (SoftCompletionChannel) channel;
      ch.checkOpen("ibv_create_cq");
      ch.cqs.incrementAndGet();
    }
    SoftCq cq = new SoftCq(this, cqe, ch, device.provider.nextObjectNumber());
    children.add(cq);
    device.provider.counters.cqs.incrementAndGet();
    return cq;
  }

  @Override
  public AsyncEvent nextAsyncEvent(Duration timeout) {
    checkOpen("ibv_get_async_event");
    try {
      return events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  void raise(AsyncEvent e) {
    if (!isClosed()) events.add(e);
  }

  /** Opened before the device's last fatal error: dead even once the device is back. */
  boolean isStale() {
    return incarnation != device.incarnation();
  }

  void checkAlive(String verb) {
    if (device.isFatal() || isStale()) {
      throw new RdmaException(verb, RdmaException.EIO, device.info.name()
          + " had a fatal error" + (device.isFatal() ? "" : ": close this context, open a new one"));
    }
  }

  void allQpsToError() {
    for (SoftQp qp : qps) qp.fatal(null);
  }

  void forget(Described child) {
    children.remove(child);
    if (closeWhenEmpty && children.isEmpty()) close();
  }

  private volatile boolean closeWhenEmpty;

  /** Closes now if nothing is open on it, else as soon as the last child closes. */
  void closeWhenEmpty() {
    closeWhenEmpty = true;
    if (children.isEmpty()) close();
  }

  @Override
  public void close() {
    if (!children.isEmpty() && closeWhenEmpty) return; // closes itself with its last child
    if (!markClosed()) return;
    try {
      children.requireNone("ibv_close_device", this);
    } catch (RdmaException busy) {
      reopen();
      throw busy;
    }
    device.contexts.remove(this);
    device.provider.counters.contexts.decrementAndGet();
  }
}
