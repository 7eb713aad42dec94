package dev.pekkordma.micrometer;

import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.streams.StreamsMetrics;
import dev.pekkordma.verbs.ResourceCounts;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;
import java.util.function.ToIntFunction;

/**
 * Binds one actor system's RDMA streams to a Micrometer registry, so that they show wherever the
 * application's metrics already go:
 *
 * <ul>
 *   <li>{@code pekko.rdma.streams.bytes} and {@code pekko.rdma.streams.messages}, counters
 *       tagged {@code direction=sent|received};
 *   <li>{@code pekko.rdma.streams.connections}, a counter tagged {@code
 *       event=opened|closed|failed}, and {@code pekko.rdma.streams.connections.live}, a gauge;
 *   <li>{@code pekko.rdma.streams.credit.stalls}: how often writes waited for a slow reader;
 *   <li>{@code pekko.rdma.resources.live}, a gauge tagged {@code type=qp|cq|mr|pd|cm_id}: the
 *       provider's resources open now;
 *   <li>the ports' counters (packets, RNR NAKs, retries) of {@link RdmaPortMetrics}.
 * </ul>
 *
 * <pre>{@code
 * new RdmaStreamsMetrics(RdmaStreams.get(system)).bindTo(registry);
 * }</pre>
 *
 * Each meter reads the streams' counters when the registry asks (a scrape), so nothing is
 * added to the data path.
 */
public final class RdmaStreamsMetrics implements MeterBinder {
  private final RdmaStreams streams;
  private final Iterable<Tag> tags;

  public RdmaStreamsMetrics(RdmaStreams streams) {
    this(streams, Tags.empty());
  }

  /** With {@code tags} on every meter (the actor system's name, say). */
  public RdmaStreamsMetrics(RdmaStreams streams, Iterable<Tag> tags) {
    this.streams = streams;
    this.tags = tags;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    counter(registry, "pekko.rdma.streams.bytes", "bytes", "direction", "sent",
        StreamsMetrics::bytesSent);
    counter(registry, "pekko.rdma.streams.bytes", "bytes", "direction", "received",
        StreamsMetrics::bytesReceived);
    counter(registry, "pekko.rdma.streams.messages", "messages", "direction", "sent",
        StreamsMetrics::messagesSent);
    counter(registry, "pekko.rdma.streams.messages", "messages", "direction", "received",
        StreamsMetrics::messagesReceived);
    counter(registry, "pekko.rdma.streams.connections", "connections", "event", "opened",
        StreamsMetrics::opened);
    counter(registry, "pekko.rdma.streams.connections", "connections", "event", "closed",
        StreamsMetrics::closed);
    counter(registry, "pekko.rdma.streams.connections", "connections", "event", "failed",
        StreamsMetrics::failed);
    FunctionCounter.builder("pekko.rdma.streams.credit.stalls", streams,
            s -> s.metrics().creditStalls())
        .description("times a connection's writes waited for the peer to free a slot")
        .tags(tags).register(registry);
    Gauge.builder("pekko.rdma.streams.connections.live", streams, s -> s.metrics().live())
        .description("stream connections up now").tags(tags).register(registry);
    resource(registry, "qp", ResourceCounts::qps);
    resource(registry, "cq", ResourceCounts::cqs);
    resource(registry, "mr", ResourceCounts::mrs);
    resource(registry, "pd", ResourceCounts::pds);
    resource(registry, "cm_id", ResourceCounts::cmIds);
    new RdmaPortMetrics(streams::ports, tags).bindTo(registry);
  }

  private void counter(MeterRegistry registry, String name, String unit, String tag,
      String value, ToDoubleFunction<StreamsMetrics> read) {
    FunctionCounter.builder(name, streams, s -> read.applyAsDouble(s.metrics()))
        .baseUnit(unit).tags(tags).tag(tag, value).register(registry);
  }

  private void resource(MeterRegistry registry, String type, ToIntFunction<ResourceCounts> n) {
    Gauge.builder("pekko.rdma.resources.live", streams,
            s -> n.applyAsInt(s.liveResources()))
        .description("the provider's resources open now").tags(tags).tag("type", type)
        .register(registry);
  }
}
