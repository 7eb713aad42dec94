package dev.pekkordma.samples.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Small runs of every test on the software provider, in one JVM and through the CM: each
 * completes, its numbers are sane (no speed is asserted: that is what the benchmark is for),
 * and the provider's resources are back where they started.
 */
class RdmaPerfRunTest {
  private static final ResourceCounts NONE = new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0);
  private static RdmaProvider provider;

  @BeforeAll
  static void open() {
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
  }

  @AfterAll
  static void close() {
    provider.close();
  }

  static PerfSpec small(PerfTest t) {
    return new PerfSpec(t, new int[] {2, 4096, 65536}, 200, 20, 32, 64, 16,
        t.verb() == PerfTest.Verb.READ ? 0 : 64);
  }

  /** {@link #small} with perftest's -q, -D, -b and -c. */
  static PerfSpec small(PerfTest t, int qps, int duration, boolean bidirectional, QpType c) {
    PerfSpec s = small(t);
    return new PerfSpec(t, s.sizes(), s.iterations(), s.warmup(), s.txDepth(), s.rxDepth(),
        s.cqModeration(), s.inlineSize(), qps, duration, 0, bidirectional, c);
  }

  private static PerfRun.PerfSettings settings(PerfSpec spec) {
    return new PerfRun.PerfSettings(spec, null, 1, 0, Duration.ofSeconds(20));
  }

  @ParameterizedTest
  @EnumSource(PerfTest.class)
  void inProcess(PerfTest t) {
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    PerfRun.Outcome o = PerfRun.inProcess(provider, settings(small(t)),
        new PrintStream(text, true, StandardCharsets.UTF_8));
    checkSane(t, o, small(t));
    assertEquals(NONE, o.leaked());
    String printed = text.toString(StandardCharsets.UTF_8);
    assertTrue(printed.contains(t.title()), printed);
    assertTrue(printed.contains(t.bandwidth() ? BwResult.HEADER : LatResult.HEADER), printed);
  }

  @ParameterizedTest
  @EnumSource(PerfTest.class)
  void throughTheConnectionManager(PerfTest t) throws Exception {
    PrintStream quiet = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    ResourceCounts before = provider.liveResources();
    CompletableFuture<InetSocketAddress> where = new CompletableFuture<>();
    CompletableFuture<PerfRun.ServerOutcome> served = CompletableFuture.supplyAsync(() ->
        PerfRun.serve(provider, new InetSocketAddress("127.0.0.1", 0), Duration.ofSeconds(20),
            Duration.ofSeconds(20), quiet, where::complete, () -> false));
    InetSocketAddress server = where.get(20, TimeUnit.SECONDS);
    PerfRun.Outcome o = PerfRun.client(provider, settings(small(t)), server, null, quiet);
    PerfRun.ServerOutcome s = served.get(30, TimeUnit.SECONDS);
    checkSane(t, o, small(t));
    assertEquals(small(t), s.spec());
    // each side's own count may see the other still open: compare once both are done
    assertEquals(NONE, provider.liveResources().minus(before));
  }

  private static PerfRun.Outcome inProcess(PerfSpec spec) {
    PerfRun.Outcome o = PerfRun.inProcess(provider, settings(spec), quiet());
    assertEquals(NONE, o.leaked());
    return o;
  }

  private static PrintStream quiet() {
    return new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
  }

  /** perftest's -q: each QP makes -n requests, so 4 QPs move 4 times the messages. */
  @ParameterizedTest
  @EnumSource(value = PerfTest.class, names = {"SEND_BW", "WRITE_BW", "READ_BW"})
  void severalQpsMakeTheirIterationsEach(PerfTest t) {
    PerfSpec spec = small(t, 4, 0, false, QpType.RC);
    PerfRun.Outcome o = inProcess(spec);
    checkSane(t, o, spec);
    for (BwResult r : o.bandwidth()) assertEquals(4L * spec.iterations(), r.iterations());
    assertEquals(4L * spec.iterations() * spec.sizes().length, o.requests());
    // the receiving side took every one of them
    if (t == PerfTest.SEND_BW) assertEquals(o.requests(), o.serverRequests());
  }

  /** perftest's -b: both sides send, the line is both directions' sum, #iterations ours. */
  @ParameterizedTest
  @EnumSource(value = PerfTest.class, names = {"SEND_BW", "WRITE_BW", "READ_BW"})
  void bidirectionalCountsBothDirections(PerfTest t) {
    PerfSpec spec = small(t, 2, 0, true, QpType.RC);
    PerfRun.Outcome o = inProcess(spec);
    checkSane(t, o, spec);
    assertEquals(spec.sizes().length, o.peerBandwidth().size());
    for (int i = 0; i < spec.sizes().length; i++) {
      BwResult both = o.bandwidth().get(i);
      BwResult peer = o.peerBandwidth().get(i);
      assertEquals(2L * spec.iterations(), peer.iterations(), peer.line());
      assertTrue(peer.averageMBps() > 0 && both.averageMBps() > peer.averageMBps(), both.line()
          + " against the peer's " + peer.line());
      assertTrue(both.msgRateMpps() > peer.msgRateMpps(), both.line());
    }
    // the answering side made as many requests as the measuring one
    assertEquals(o.requests(), o.serverRequests());
  }

  /** perftest's -D: a size runs for the duration; what completed in it is counted. */
  @ParameterizedTest
  @CsvSource({"WRITE_BW, 1, false", "SEND_BW, 2, true", "READ_BW, 1, false"})
  void timedRunEndsAfterItsDuration(PerfTest t, int qps, boolean bidirectional) {
    PerfSpec spec = small(t, qps, 1, bidirectional, QpType.RC).withSizes(new int[] {4096});
    long start = System.nanoTime();
    PerfRun.Outcome o = inProcess(spec);
    double seconds = (System.nanoTime() - start) / 1e9;
    assertTrue(seconds >= 1 && seconds < 20, "took " + seconds + " s");
    BwResult r = o.bandwidth().get(0);
    assertTrue(r.iterations() > 0, r.line());
    assertTrue(r.averageMBps() > 0 && r.msgRateMpps() > 0, r.line());
    assertEquals(0, r.peakMBps(), r.line()); // perftest measures no peak in a timed run
    assertTrue(o.requests() >= r.iterations() / (bidirectional ? 2 : 1), o.requests() + " < "
        + r.line());
    double mbps = r.msgRateMpps() * 1e6 * r.size() / 1048576.0;
    assertEquals(r.averageMBps(), mbps, r.averageMBps() * 1e-9, r.line());
  }

  /** perftest's -c: UC runs send and write tests, UD send tests (datagrams up to the MTU). */
  @ParameterizedTest
  @CsvSource({"UC, SEND_BW", "UC, WRITE_BW", "UC, SEND_LAT", "UC, WRITE_LAT", "UD, SEND_BW",
      "UD, SEND_LAT"})
  void unreliableTransports(QpType c, PerfTest t) {
    PerfSpec spec = small(t, 1, 0, false, c).withSizes(new int[] {2, 1024, 4096});
    ByteArrayOutputStream text = new ByteArrayOutputStream();
    PerfRun.Outcome o = PerfRun.inProcess(provider, settings(spec),
        new PrintStream(text, true, StandardCharsets.UTF_8));
    assertEquals(NONE, o.leaked());
    checkSane(t, o, spec);
    String printed = text.toString(StandardCharsets.UTF_8);
    assertTrue(printed.contains(" Connection type : " + c), printed);
  }

  /** Several QPs, both ways, for a time and through the CM. */
  @ParameterizedTest
  @CsvSource({"SEND_BW, 0", "WRITE_BW, 0", "SEND_BW, 1", "READ_BW, 1"})
  void severalQpsBothWaysThroughTheConnectionManager(PerfTest t, int duration) throws Exception {
    PerfSpec spec = small(t, 3, duration, true, QpType.RC);
    if (duration > 0) spec = spec.withSizes(new int[] {4096});
    PerfSpec asked = spec;
    ResourceCounts before = provider.liveResources();
    CompletableFuture<InetSocketAddress> where = new CompletableFuture<>();
    CompletableFuture<PerfRun.ServerOutcome> served = CompletableFuture.supplyAsync(() ->
        PerfRun.serve(provider, new InetSocketAddress("127.0.0.1", 0), Duration.ofSeconds(20),
            Duration.ofSeconds(20), quiet(), where::complete, () -> false));
    InetSocketAddress server = where.get(20, TimeUnit.SECONDS);
    PerfRun.Outcome o;
    try {
      o = PerfRun.client(provider, settings(asked), server, null, quiet());
    } catch (RuntimeException e) {
      // the server's failure says why
      served.handle((v, failure) -> {
        if (failure != null) e.addSuppressed(failure);
        return null;
      }).get(30, TimeUnit.SECONDS);
      throw e;
    }
    PerfRun.ServerOutcome s = served.get(30, TimeUnit.SECONDS);
    assertEquals(asked, s.spec());
    if (duration == 0) {
      checkSane(t, o, spec);
      assertEquals(o.requests(), s.requests());
    } else {
      assertTrue(o.bandwidth().get(0).iterations() > 0, o.bandwidth().get(0).line());
    }
    assertEquals(spec.sizes().length, o.peerBandwidth().size());
    assertEquals(NONE, provider.liveResources().minus(before));
  }

  @Test
  void udSizesAboveTheMtuAreRefusedAndAllStopsThere() {
    PerfSpec big = small(PerfTest.SEND_BW, 1, 0, false, QpType.UD).withSizes(new int[] {8192});
    dev.pekkordma.samples.BadOption e = org.junit.jupiter.api.Assertions.assertThrows(
        dev.pekkordma.samples.BadOption.class, () -> PerfRun.inProcess(provider, settings(big),
            quiet()));
    assertTrue(e.getMessage().contains("8192") && e.getMessage().contains("4096"),
        e.getMessage());
    PerfSpec all = small(PerfTest.SEND_BW, 1, 0, false, QpType.UD)
        .withSizes(PerfSpec.ALL_SIZES.clone());
    all = new PerfSpec(all.test(), all.sizes(), 20, 0, 32, 64, 16, 0, 1, 0, 0, false, QpType.UD);
    PerfRun.Outcome o = inProcess(all);
    assertEquals(4096, o.bandwidth().get(o.bandwidth().size() - 1).size());
    assertEquals(12, o.bandwidth().size()); // 2 .. 4096
  }

  static void checkSane(PerfTest t, PerfRun.Outcome o, PerfSpec spec) {
    int[] sizes = spec.sizes();
    if (t.bandwidth()) {
      assertEquals(sizes.length, o.bandwidth().size());
      for (int i = 0; i < sizes.length; i++) {
        BwResult r = o.bandwidth().get(i);
        assertEquals(sizes[i], r.size());
        assertEquals((long) spec.iterations() * spec.qps(), r.iterations());
        assertTrue(r.averageMBps() > 0 && Double.isFinite(r.averageMBps()), r.line());
        assertTrue(r.peakMBps() >= r.averageMBps(), r.line());
        assertTrue(r.msgRateMpps() > 0, r.line());
        // MB/s and Mpps say the same thing
        double mbps = r.msgRateMpps() * 1e6 * r.size() / 1048576.0;
        assertEquals(r.averageMBps(), mbps, r.averageMBps() * 1e-9, r.line());
      }
    } else {
      assertEquals(sizes.length, o.latency().size());
      for (int i = 0; i < sizes.length; i++) {
        LatResult r = o.latency().get(i);
        assertEquals(sizes[i], r.size());
        assertTrue(r.minUs() > 0, r.line());
        assertTrue(r.minUs() <= r.typicalUs() && r.typicalUs() <= r.maxUs(), r.line());
        assertTrue(r.minUs() <= r.averageUs() && r.averageUs() <= r.maxUs(), r.line());
        assertTrue(r.typicalUs() <= r.p99Us() && r.p99Us() <= r.p999Us(), r.line());
        assertTrue(r.p999Us() <= r.maxUs(), r.line());
        assertTrue(r.stdevUs() >= 0, r.line());
      }
    }
    assertEquals((long) sizes.length * spec.iterations() * spec.qps(), o.requests());
  }
}
