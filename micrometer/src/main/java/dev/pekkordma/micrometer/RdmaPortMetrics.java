package dev.pekkordma.micrometer;

import dev.pekkordma.runtime.PortMetrics;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.PortCounters;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * Binds the counters of the provider's RDMA ports to a Micrometer registry, tagged
 * {@code device} and {@code port}:
 *
 * <ul>
 *   <li>{@code pekko.rdma.port.packets}, tagged {@code direction=sent|received};
 *   <li>{@code pekko.rdma.port.rnr.naks}, tagged {@code direction=received|sent}: a received one
 *       means a peer had no receive posted for us;
 *   <li>{@code pekko.rdma.port.retries}: transport retries (lost packets, ACK timeouts);
 *   <li>{@code pekko.rdma.port.retries.exceeded}, tagged {@code kind=transport|rnr}: requests
 *       that failed once their retries were spent;
 *   <li>{@code pekko.rdma.ports}, a gauge: the ports there are.
 * </ul>
 *
 * A port's meters appear with its device, and keep their last value if the device goes; a
 * counter the device does not keep has no meter. The counters are the
 * device's, for every QP on the port. Read when the registry asks, at most every {@link
 * #REFRESH_NANOS} nanoseconds.
 */
public final class RdmaPortMetrics implements MeterBinder {
  static final long REFRESH_NANOS = 100_000_000L; // one read of sysfs a scrape
  private final Supplier<List<PortMetrics>> ports;
  private final Iterable<Tag> tags;
  private final Map<String, PortCounters> last = new ConcurrentHashMap<>();
  private volatile MeterRegistry registry;
  private long refreshedAt; // guarded by this
  private int inUse; // guarded by this

  public RdmaPortMetrics(RdmaRuntime runtime) {
    this(runtime, Tags.empty());
  }

  /** With {@code tags} on every meter. */
  public RdmaPortMetrics(RdmaRuntime runtime, Iterable<Tag> tags) {
    this(runtime::ports, tags);
  }

  RdmaPortMetrics(Supplier<List<PortMetrics>> ports, Iterable<Tag> tags) {
    this.ports = ports;
    this.tags = tags;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    this.registry = registry;
    // the registry holds its meters' state weakly: this gauge keeps the cache alive with them
    Gauge.builder("pekko.rdma.ports", this, m -> m.refreshed().inUse).strongReference(true)
        .description("RDMA ports of the provider's devices").tags(tags).register(registry);
    refresh();
  }

  private synchronized RdmaPortMetrics refreshed() {
    if (System.nanoTime() - refreshedAt >= REFRESH_NANOS) refresh();
    return this;
  }

  private synchronized void refresh() {
    refreshedAt = System.nanoTime();
    List<PortMetrics> now = ports.get();
    inUse = now.size();
    for (PortMetrics p : now) {
      String key = p.device() + "/" + p.port();
      if (last.put(key, p.counters()) == null) register(key, p);
    }
  }

  private void register(String key, PortMetrics first) {
    Tags portTags = Tags.of(tags).and("device", first.device(), "port", "" + first.port());
    PortCounters c = first.counters();
    counter(key, portTags, c, "pekko.rdma.port.packets", "direction", "sent",
        PortCounters::packetsSent);
    counter(key, portTags, c, "pekko.rdma.port.packets", "direction", "received",
        PortCounters::packetsReceived);
    counter(key, portTags, c, "pekko.rdma.port.rnr.naks", "direction", "received",
        PortCounters::rnrNaksReceived);
    counter(key, portTags, c, "pekko.rdma.port.rnr.naks", "direction", "sent",
        PortCounters::rnrNaksSent);
    counter(key, portTags, c, "pekko.rdma.port.retries", null, null, PortCounters::retries);
    counter(key, portTags, c, "pekko.rdma.port.retries.exceeded", "kind", "transport",
        PortCounters::retriesExceeded);
    counter(key, portTags, c, "pekko.rdma.port.retries.exceeded", "kind", "rnr",
        PortCounters::rnrRetriesExceeded);
  }

  private void counter(String key, Tags portTags, PortCounters first, String name, String tag,
      String value, ToLongFunction<PortCounters> read) {
    if (read.applyAsLong(first) == PortCounters.NOT_COUNTED) return;
    Tags all = tag == null ? portTags : portTags.and(tag, value);
    FunctionCounter.builder(name, this, m -> read.applyAsLong(m.refreshed().last.get(key)))
        .tags(all).register(registry);
  }
}
