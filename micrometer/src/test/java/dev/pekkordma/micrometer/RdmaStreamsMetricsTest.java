package dev.pekkordma.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.streams.TransferResult;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A registry bound to the streams reads what the connections moved, and the live resources. */
class RdmaStreamsMetricsTest {
  static ActorSystem<Void> system;

  @BeforeAll
  static void start() {
    system = ActorSystem.create(Behaviors.empty(), "RdmaStreamsMetricsTest",
        ConfigFactory.parseString("pekko-rdma.provider = soft\npekko.loglevel = WARNING")
            .withFallback(ConfigFactory.load()));
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  private static <T> T await(CompletionStage<T> s) throws Exception {
    return s.toCompletableFuture().get(20, TimeUnit.SECONDS);
  }

  @Test
  void theMetersReadWhatMoved() throws Exception {
    RdmaStreams rdma = RdmaStreams.get(system);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new RdmaStreamsMetrics(rdma, Tags.of("system", "test")).bindTo(registry);
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), "127.0.0.1", 0));
    List<ByteString> sent = new ArrayList<>();
    for (int i = 0; i < 50; i++) sent.add(ByteString.fromArray(new byte[20]));
    Pair<CompletionStage<TransferResult>, CompletionStage<List<ByteString>>> run =
        Source.from(sent).viaMat(rdma.outgoingConnectionWithResult(binding.localAddress(),
                rdma.settings(), true), Keep.right())
            .mapMaterializedValue(Pair::second).toMat(Sink.seq(), Keep.both()).run(system);
    assertEquals(50, await(run.second()).size());
    TransferResult client = await(run.first());
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (registry.get("pekko.rdma.streams.connections").tag("event", "closed")
        .functionCounter().count() < 2 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(2, registry.get("pekko.rdma.streams.connections").tag("event", "opened")
        .functionCounter().count());
    assertEquals(2, registry.get("pekko.rdma.streams.connections").tag("event", "closed")
        .functionCounter().count());
    assertEquals(2.0 * client.bytesSent(), registry.get("pekko.rdma.streams.bytes")
        .tag("direction", "sent").tag("system", "test").functionCounter().count());
    assertEquals(100, registry.get("pekko.rdma.streams.messages").tag("direction", "received")
        .functionCounter().count());
    assertEquals(0, registry.get("pekko.rdma.streams.connections.live").gauge().value());
    // the soft device counts the packets (the connections are over: the count stands still)
    System.gc(); // the registry holds the meters' state weakly: it must not be the only holder
    Thread.sleep(RdmaPortMetrics.REFRESH_NANOS / 1_000_000 + 20);
    double packets = registry.find("pekko.rdma.port.packets").tag("direction", "sent")
        .functionCounters().stream().mapToDouble(c -> c.count()).sum();
    long counted = rdma.ports().stream().mapToLong(p -> p.counters().packetsSent()).sum();
    assertTrue(counted > 0, rdma.ports().toString());
    assertEquals(counted, packets);
    assertEquals(rdma.ports().size(), registry.get("pekko.rdma.ports").gauge().value());
    await(binding.unbind());
    double qps = registry.get("pekko.rdma.resources.live").tag("type", "qp").gauge().value();
    assertEquals(rdma.liveResources().qps(), qps);
    assertTrue(registry.getMeters().size() >= 14, String.valueOf(registry.getMeters().size()));
  }
}
