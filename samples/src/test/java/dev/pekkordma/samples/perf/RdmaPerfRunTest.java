package dev.pekkordma.samples.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
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
import org.junit.jupiter.params.ParameterizedTest;
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

  private static PerfRun.Settings settings(PerfSpec spec) {
    return new PerfRun.Settings(spec, null, 1, 0, Duration.ofSeconds(20));
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

  static void checkSane(PerfTest t, PerfRun.Outcome o, PerfSpec spec) {
    int[] sizes = spec.sizes();
    if (t.bandwidth()) {
      assertEquals(sizes.length, o.bandwidth().size());
      for (int i = 0; i < sizes.length; i++) {
        BwResult r = o.bandwidth().get(i);
        assertEquals(sizes[i], r.size());
        assertEquals(spec.iterations(), r.iterations());
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
    assertEquals((long) sizes.length * spec.iterations(), o.requests());
  }
}
