package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the metrics say is what moved: counts per live connection while it runs, totals that
 * equal the connections' own results once they end, failures counted, credit stalls seen when
 * the reader is slow, and the same in JDK Flight Recorder's events. Each test has an actor system
 * of its own, so the counts are exact.
 */
class MetricsTest {
  ActorSystem<Void> system;
  RdmaStreams rdma;

  @BeforeEach
  void start() {
    system = StreamsTestKit.system("MetricsTest", "");
    rdma = RdmaStreams.get(system);
  }

  @AfterEach
  void stop() {
    system.terminate();
  }

  private static List<ByteString> messages(int n, int size) {
    List<ByteString> out = new ArrayList<>();
    for (int i = 0; i < n; i++) out.add(ByteString.fromArray(new byte[size]));
    return out;
  }

  private StreamsMetrics afterBothEnded(long opened) throws InterruptedException {
    long deadline = System.nanoTime() + StreamsTestKit.WAIT.toNanos();
    StreamsMetrics m = rdma.metrics();
    while ((m.live() > 0 || m.closed() + m.failed() < opened) && System.nanoTime() < deadline) {
      Thread.sleep(10);
      m = rdma.metrics();
    }
    return m;
  }

  @Test
  void theTotalsAreWhatTheConnectionsMoved() throws Exception {
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    Pair<CompletionStage<TransferResult>, CompletionStage<List<ByteString>>> run =
        Source.from(messages(100, 100))
            .viaMat(rdma.outgoingConnectionWithResult(binding.localAddress(), rdma.settings(),
                true), Keep.right())
            .mapMaterializedValue(Pair::second)
            .toMat(Sink.seq(), Keep.both()).run(system);
    assertEquals(100, await(run.second()).size());
    TransferResult client = await(run.first());
    StreamsMetrics m = afterBothEnded(2);
    assertEquals(2, m.opened(), "the client's end and the server's");
    assertEquals(2, m.closed());
    assertEquals(0, m.failed());
    assertEquals(0, m.live());
    // the server echoed what it got: each way, the client's figures twice over
    assertEquals(2 * client.messagesSent(), m.messagesSent());
    assertEquals(2 * client.bytesSent(), m.bytesSent());
    assertEquals(m.messagesSent(), m.messagesReceived());
    assertEquals(m.bytesSent(), m.bytesReceived());
    assertEquals(10_000, client.bytesSent());
    await(binding.unbind());
  }

  @Test
  void aLiveConnectionShowsItsOwnTraffic() throws Exception {
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    Pair<SourceQueueWithComplete<ByteString>, CompletionStage<List<ByteString>>> run =
        Source.<ByteString>queue(16, OverflowStrategy.backpressure())
            .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
            .take(5).toMat(Sink.seq(), Keep.both()).run(system);
    for (ByteString b : messages(5, 7)) await(run.first().offer(b));
    await(run.second());
    StreamsMetrics m = rdma.metrics();
    ConnectionMetrics client = m.connections().stream().filter(c -> c.role().equals("client"))
        .findFirst().orElseThrow(() -> new AssertionError("no live client in " + m));
    assertEquals(binding.localAddress().getPort(), client.remote().getPort());
    assertEquals(5, client.messagesSent());
    assertEquals(35, client.bytesSent());
    assertTrue(client.up().compareTo(Duration.ZERO) > 0);
    run.first().complete();
    await(binding.unbind());
  }

  @Test
  void aConnectionThatFailsIsCountedAndRecorded() throws Exception {
    try (Recording r = new Recording()) {
      r.enable("dev.pekkordma.streams.ConnectionError");
      r.start();
      ServerBinding gone = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      InetSocketAddress nobody = gone.localAddress();
      await(gone.unbind());
      ExecutionException e = assertThrows(ExecutionException.class, () -> await(
          Source.single(ByteString.fromString("x"))
              .via(rdma.outgoingConnection(HOST, nobody.getPort())).runWith(Sink.seq(), system)));
      assertTrue(e.getCause() instanceof RdmaStreamException, String.valueOf(e.getCause()));
      assertEquals(1, rdma.metrics().failed());
      r.stop();
      List<RecordedEvent> errors = events(r, "dev.pekkordma.streams.ConnectionError");
      assertEquals(1, errors.size(), String.valueOf(errors));
      assertTrue(errors.get(0).getString("remote").contains(String.valueOf(nobody.getPort())));
    }
  }

  @Test
  void aSlowReaderShowsAsCreditStallsOnTheWriter() throws Exception {
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class)
        .mapAsync(1, b -> Patterns.after(Duration.ofMillis(5), system.classicSystem(),
            () -> CompletableFuture.completedFuture(b))), HOST, 0));
    await(Source.from(messages(60, 2000)) // each its own write: too large to gather
        .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
        .runWith(Sink.ignore(), system), Duration.ofSeconds(30));
    StreamsMetrics m = afterBothEnded(2);
    assertTrue(m.creditStalls() > 0, "no credit stall counted: " + m);
    await(binding.unbind());
  }

  @Test
  void flightRecorderSeesEachConnectionsLifeAndTheTotals() throws Exception {
    try (Recording r = new Recording()) {
      r.enable("dev.pekkordma.streams.ConnectionOpened");
      r.enable("dev.pekkordma.streams.ConnectionClosed");
      r.enable("dev.pekkordma.streams.Transfer").withPeriod(Duration.ofMillis(50));
      r.start();
      ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      await(Source.from(messages(10, 30))
          .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
          .runWith(Sink.seq(), system));
      afterBothEnded(2);
      Thread.sleep(200); // a period or two of the totals
      r.stop();
      assertEquals(2, events(r, "dev.pekkordma.streams.ConnectionOpened").size());
      List<RecordedEvent> closed = events(r, "dev.pekkordma.streams.ConnectionClosed");
      assertEquals(2, closed.size(), String.valueOf(closed));
      for (RecordedEvent e : closed) {
        assertEquals("closed", e.getString("outcome"));
        assertEquals(300, e.getLong("bytesSent"), String.valueOf(e));
        assertEquals(10, e.getLong("messagesReceived"), String.valueOf(e));
        assertTrue(e.getDuration().compareTo(Duration.ZERO) > 0);
      }
      List<RecordedEvent> totals = events(r, "dev.pekkordma.streams.Transfer");
      assertTrue(totals.stream().anyMatch(e -> e.getLong("bytesSent") == 600), "totals: "
          + totals);
      await(binding.unbind());
    }
  }

  @Test
  void thePortsCountWhatTheConnectionsSentAndFlightRecorderSeesThem() throws Exception {
    try (Recording r = new Recording()) {
      r.enable("dev.pekkordma.runtime.PortCounters").withPeriod(Duration.ofMillis(50));
      r.start();
      long before = packetsSent(rdma.ports());
      ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      await(Source.from(messages(40, 3000)) // too large to gather: a write each
          .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
          .runWith(Sink.seq(), system));
      long sent = packetsSent(rdma.ports()) - before;
      // each message went there and back, a write at least each time
      assertTrue(sent >= 80, sent + " packets sent for 80 writes");
      Thread.sleep(200); // a period or two
      r.stop();
      List<RecordedEvent> ports = events(r, "dev.pekkordma.runtime.PortCounters");
      assertTrue(ports.stream().anyMatch(e -> e.getLong("packetsSent") >= 80
          && e.getInt("port") == 1 && !e.getString("device").isEmpty()), "events: " + ports);
      await(binding.unbind());
    }
  }

  private static long packetsSent(List<dev.pekkordma.runtime.PortMetrics> ports) {
    long n = 0;
    for (var p : ports) {
      if (p.counters().packetsSent() > 0) n += p.counters().packetsSent();
    }
    return n;
  }

  private static List<RecordedEvent> events(Recording r, String name) throws Exception {
    Path file = Files.createTempFile("metrics", ".jfr");
    try {
      r.dump(file);
      List<RecordedEvent> out = new ArrayList<>();
      for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
        if (e.getEventType().getName().equals(name)) out.add(e);
      }
      return out;
    } finally {
      Files.deleteIfExists(file);
    }
  }
}
