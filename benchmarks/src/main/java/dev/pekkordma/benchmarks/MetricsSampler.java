package dev.pekkordma.benchmarks;

import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.streams.StreamsMetrics;
import java.time.Duration;
import jdk.jfr.Recording;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;

/**
 * What a monitoring system does to a running application, so that a benchmark can show its cost:
 * a thread reads the streams' metrics and the ports' counters at a fixed interval (as a Micrometer
 * registry's scrape does), and an in-memory Flight Recorder recording takes every pekko-rdma event,
 * the periodic ones at the same interval.
 */
final class MetricsSampler implements AutoCloseable {
  private final Recording recording = new Recording();
  private final Thread reader;
  private volatile boolean running = true;
  private volatile long samples;
  private volatile long bytesSeen;

  MetricsSampler(ActorSystem system, Duration every) {
    RdmaStreams rdma = RdmaStreams.get(Adapter.toTyped(system));
    for (String event : new String[] {"dev.pekkordma.streams.ConnectionOpened",
        "dev.pekkordma.streams.ConnectionClosed", "dev.pekkordma.streams.ConnectionError"}) {
      recording.enable(event);
    }
    recording.enable("dev.pekkordma.streams.Transfer").withPeriod(every);
    recording.enable("dev.pekkordma.runtime.PortCounters").withPeriod(every);
    recording.setToDisk(false);
    recording.start();
    reader = new Thread(() -> {
      while (running) {
        StreamsMetrics m = rdma.metrics();
        rdma.ports();
        bytesSeen = m.bytesSent();
        samples++;
        try {
          Thread.sleep(every.toMillis());
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "metrics-sampler");
    reader.setDaemon(true);
    reader.start();
  }

  long samples() {
    return samples;
  }

  long bytesSeen() {
    return bytesSeen;
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    reader.interrupt();
    reader.join();
    recording.stop();
    recording.close();
  }
}
