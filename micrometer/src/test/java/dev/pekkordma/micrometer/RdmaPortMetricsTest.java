package dev.pekkordma.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.pekkordma.runtime.PortMetrics;
import dev.pekkordma.verbs.PortCounters;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Ports come and go: each gets its meters once, keeps its last value, and has none for what its
 * device does not count.
 */
class RdmaPortMetricsTest {
  private static PortCounters counters(long packets, long rnr) {
    return new PortCounters(packets, packets, rnr, 0, 3, 0, PortCounters.NOT_COUNTED, Map.of());
  }

  @Test
  void aPortsMetersFollowItsCountersAndOutliveIt() throws Exception {
    AtomicReference<List<PortMetrics>> ports = new AtomicReference<>(List.of());
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new RdmaPortMetrics(ports::get, Tags.of("system", "test")).bindTo(registry);
    assertNull(registry.find("pekko.rdma.port.packets").functionCounter());

    ports.set(List.of(new PortMetrics("mlx5_0", 1, counters(10, 1))));
    Thread.sleep(RdmaPortMetrics.REFRESH_NANOS / 1_000_000 + 50);
    assertEquals(1, registry.get("pekko.rdma.ports").gauge().value());
    assertEquals(10, registry.get("pekko.rdma.port.packets").tag("device", "mlx5_0")
        .tag("port", "1").tag("direction", "sent").tag("system", "test")
        .functionCounter().count());
    assertEquals(1, registry.get("pekko.rdma.port.rnr.naks").tag("direction", "received")
        .functionCounter().count());
    assertEquals(3, registry.get("pekko.rdma.port.retries").functionCounter().count());
    // the device does not count RNR retries spent: no meter says 0 or -1 for it
    assertNull(registry.find("pekko.rdma.port.retries.exceeded").tag("kind", "rnr")
        .functionCounter());

    ports.set(List.of(new PortMetrics("mlx5_0", 1, counters(25, 4))));
    Thread.sleep(RdmaPortMetrics.REFRESH_NANOS / 1_000_000 + 50);
    assertEquals(25, registry.get("pekko.rdma.port.packets").tag("direction", "received")
        .functionCounter().count());

    ports.set(List.of()); // the device closed: its last values stay
    Thread.sleep(RdmaPortMetrics.REFRESH_NANOS / 1_000_000 + 50);
    assertEquals(0, registry.get("pekko.rdma.ports").gauge().value());
    assertEquals(4, registry.get("pekko.rdma.port.rnr.naks").tag("direction", "received")
        .functionCounter().count());
  }
}
