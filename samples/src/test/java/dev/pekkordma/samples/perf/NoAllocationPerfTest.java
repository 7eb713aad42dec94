package dev.pekkordma.samples.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * rdma-perf's loops allocate nothing per request, as core's NoAllocationTest checks the provider:
 * heap bytes allocated by the measuring thread (and by the answering one) over the measured
 * runs, after a warm-up, divided by the requests made, round to zero. (A few hundred bytes per
 * run can come from the provider's locks under contention; nothing that grows with requests.)
 */
class NoAllocationPerfTest {
  @ParameterizedTest
  @EnumSource(PerfTest.class)
  void measuredLoopsAllocateNothingPerRequest(PerfTest t) {
    int n = t.bandwidth() ? 20_000 : 10_000;
    PerfSpec spec = new PerfSpec(t, new int[] {64, 4096}, n, 2_000, 64, 256, 16,
        t.verb() == PerfTest.Verb.READ ? 0 : 64);
    check(spec, 2L * n);
  }

  /** -q, -b, -c and -D: more QPs, both sides' loops, datagrams, a timed run. */
  @ParameterizedTest(name = "{0} -q {1} -b {2} -c {3} -D {4}")
  @CsvSource({"SEND_BW, 4, true, RC, 0", "WRITE_BW, 4, true, RC, 0", "READ_BW, 2, true, RC, 0",
      "SEND_BW, 1, false, UD, 0", "SEND_BW, 2, false, UC, 0", "WRITE_BW, 2, false, RC, 1"})
  void moreQpsBothWaysAndOtherTransportsAllocateNothingPerRequest(PerfTest t, int qps,
      boolean bidirectional, QpType c, int duration) {
    int n = 10_000;
    PerfSpec spec = new PerfSpec(t, new int[] {64, 4096}, n, duration > 0 ? 0 : 1_000, 64, 256,
        16, t.verb() == PerfTest.Verb.READ ? 0 : 64, qps, duration, 0, bidirectional, c);
    check(spec, duration > 0 ? -1 : 2L * n * qps);
  }

  private static void check(PerfSpec spec, long requests) {
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory
        .parseString("pekko-rdma.provider = soft").withFallback(ConfigFactory.load()))) {
      PerfRun.Outcome o = PerfRun.inProcess(provider,
          new PerfRun.PerfSettings(spec, null, 1, 0, Duration.ofSeconds(30)),
          new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
      assertTrue(o.clientLoopAllocatedBytes() >= 0, "this JVM does not count allocations");
      if (requests >= 0) assertEquals(requests, o.requests());
      assertEquals(0, o.clientLoopAllocatedBytes() / o.requests(), "the measuring side allocated "
          + o.clientLoopAllocatedBytes() + " B for " + o.requests() + " requests");
      if (o.serverRequests() > 0) {
        assertEquals(0, o.serverLoopAllocatedBytes() / o.serverRequests(), "the answering side"
            + " allocated " + o.serverLoopAllocatedBytes() + " B for " + o.serverRequests()
            + " requests");
      }
    }
  }
}
