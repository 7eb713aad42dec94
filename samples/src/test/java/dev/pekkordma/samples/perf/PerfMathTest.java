package dev.pekkordma.samples.perf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.QpType;
import org.junit.jupiter.api.Test;

/** The request encoding and the result arithmetic, on made-up timestamps. */
class PerfMathTest {
  @Test
  void requestRoundTrips() {
    PerfSpec a = new PerfSpec(PerfTest.SEND_LAT, new int[] {2, 4096, 65536, 1 << 20}, 1000,
        PerfSpec.AUTO_WARMUP, 128, 512, 100, 220);
    assertEquals(a, PerfSpec.decode(a.encode()));
    PerfSpec all = new PerfSpec(PerfTest.READ_BW, PerfSpec.ALL_SIZES.clone(), 5000, 7, 64, 1,
        64, 0);
    assertEquals(all, PerfSpec.decode(all.encode()));
    assertEquals(PerfSpec.encodedLength(a.sizes()), a.encode().length);
    assertTrue(PerfRun.connectRequestLength(all.sizes()) <= 56);
  }

  @Test
  void requestCarriesQpsDurationDirectionAndConnection() {
    PerfSpec a = new PerfSpec(PerfTest.SEND_BW, new int[] {4096, 65536}, 5000, 0, 128, 512, 100,
        0, 16, 300, 20, true, QpType.UC);
    PerfSpec b = PerfSpec.decode(a.encode());
    assertEquals(a, b);
    assertEquals(16, b.qps());
    assertEquals(300, b.duration());
    assertEquals(20, b.margin());
    assertTrue(b.bidirectional());
    assertEquals(QpType.UC, b.connection());
    assertEquals(0, b.warmupFor(4096)); // a timed run warms up in its margin
    // a spec the options would refuse is refused from the wire too
    byte[] readOnUc = new PerfSpec(PerfTest.READ_BW, new int[] {64}, 10, 0, 8, 8, 8, 0, 1, 0, 0,
        false, QpType.UC).encode();
    assertThrows(PerfFailure.class, () -> PerfSpec.decode(readOnUc));
    byte[] timedLatency = new PerfSpec(PerfTest.SEND_LAT, new int[] {64}, 10, 0, 8, 8, 8, 0, 1,
        5, 1, false, QpType.RC).encode();
    assertThrows(PerfFailure.class, () -> PerfSpec.decode(timedLatency));
  }

  @Test
  void nonsenseRequestRefused() {
    assertThrows(PerfFailure.class, () -> PerfSpec.decode(new byte[] {1, 2, 3}));
    byte[] b = new PerfSpec(PerfTest.WRITE_BW, new int[] {64}, 10, 0, 8, 8, 8, 0).encode();
    b[0] = 0;
    assertThrows(PerfFailure.class, () -> PerfSpec.decode(b));
  }

  @Test
  void allSizesArePowersOfTwoFrom2To8M() {
    assertEquals(23, PerfSpec.ALL_SIZES.length);
    assertEquals(2, PerfSpec.ALL_SIZES[0]);
    assertEquals(8 << 20, PerfSpec.ALL_SIZES[22]);
  }

  @Test
  void autoWarmupIsLongerBeforeTheFirstSize() {
    PerfSpec s = new PerfSpec(PerfTest.WRITE_BW, new int[] {4096, 1 << 20}, 10,
        PerfSpec.AUTO_WARMUP, 8, 8, 8, 0);
    assertEquals(50_000, s.warmupFor(4096));
    assertEquals(64, s.warmupFor(1 << 20));
  }

  @Test
  void steadyBandwidth() {
    // 1000 requests of 1 MiB, one posted and one completed every microsecond: 10^6 MB/s
    int n = 1000;
    long[] posted = new long[n];
    long[] completed = new long[n];
    for (int i = 0; i < n; i++) {
      posted[i] = i * 1000L;
      completed[i] = (i + 1) * 1000L;
    }
    BwResult r = BwResult.of(1 << 20, n, posted, completed, 10);
    assertEquals(1e6, r.averageMBps(), 1e-6);
    assertEquals(r.averageMBps(), r.peakMBps(), 1e-6);
    assertEquals(1.0, r.msgRateMpps(), 1e-9);
  }

  @Test
  void peakIsTheBestStretch() {
    // the second half twice as fast as the first: the peak is the second half's rate
    int n = 200;
    long[] posted = new long[n];
    long[] completed = new long[n];
    long t = 0;
    for (int i = 0; i < n; i++) {
      t += i < 100 ? 2000 : 1000;
      posted[i] = t - (i < 100 ? 2000 : 1000);
      completed[i] = t;
    }
    BwResult r = BwResult.of(1000, n, posted, completed, 1);
    assertEquals(1000 / 1e-6 / 1048576.0, r.peakMBps(), 1e-6);
    assertTrue(r.averageMBps() < r.peakMBps());
  }

  @Test
  void severalQpsCountCompletionEventsInAll() {
    // two QPs, each posting 4 requests a microsecond apart, alternately; a completion event
    // every 2 requests: 8 requests of 1 MiB in 8 us
    int n = 8;
    long[] posted = new long[n];
    for (int i = 0; i < n; i++) posted[i] = i * 1000L;
    long[] doneAt = {2, 4, 6, 8};
    long[] doneTime = {2000, 4000, 6000, 8000};
    BwResult r = BwResult.of(1 << 20, n, posted, doneAt, doneTime, 4);
    assertEquals(8, r.iterations());
    assertEquals(1e6, r.averageMBps(), 1e-6);
    assertEquals(1e6, r.peakMBps(), 1e-6);
    // the same as a single QP signaling every second request
    long[] completed = new long[n];
    for (int j = 1; j < n; j += 2) completed[j] = (j + 1) * 1000L;
    assertEquals(r, BwResult.of(1 << 20, n, posted, completed, 2));
  }

  @Test
  void timedRunHasNoPeakAndBothDirectionsAdd() {
    BwResult t = BwResult.timed(1 << 20, 1000, 1_000_000_000L); // 1000 MiB in a second
    assertEquals(1000.0, t.averageMBps(), 1e-9);
    assertEquals(0.001, t.msgRateMpps(), 1e-12);
    assertEquals(0.0, t.peakMBps());
    assertEquals(0.0, BwResult.timed(4096, 0, 1_000_000_000L).averageMBps());
    BwResult both = t.plus(BwResult.timed(1 << 20, 500, 1_000_000_000L));
    assertEquals(1500.0, both.averageMBps(), 1e-9);
    assertEquals(0.0015, both.msgRateMpps(), 1e-12);
    assertEquals(1000, both.iterations()); // perftest's #iterations: this side's
  }

  @Test
  void signaledEveryModerationAndTheLast() {
    assertTrue(BwResult.signaled(99, 100, 250));
    assertTrue(BwResult.signaled(249, 100, 250));
    assertTrue(!BwResult.signaled(100, 100, 250));
  }

  @Test
  void latencyStatistics() {
    // round trips of 10 us except two outliers, which are dropped
    int n = 1001;
    long[] posted = new long[n];
    for (int i = 1; i < n; i++) posted[i] = posted[i - 1] + (i == 500 ? 1_000_000 : i == 700 ? 500_000 : 10_000);
    LatResult r = LatResult.of(2, n, posted, 2);
    assertEquals(5.0, r.minUs(), 1e-9);
    assertEquals(5.0, r.typicalUs(), 1e-9);
    assertEquals(5.0, r.averageUs(), 1e-9);
    assertEquals(0.0, r.stdevUs(), 1e-9);
    assertEquals(250.0, r.maxUs(), 1e-9); // perftest's t_max: the smaller outlier
    assertEquals(5.0, r.p99Us(), 1e-9);
    LatResult read = LatResult.of(2, n, posted, 1);
    assertEquals(10.0, read.typicalUs(), 1e-9);
  }

  @Test
  void sizesListEncodesCompactly() {
    assertArrayEquals(new int[] {4096, 65536, 1 << 20},
        PerfSpec.decode(new PerfSpec(PerfTest.SEND_BW, new int[] {4096, 65536, 1 << 20}, 5, 0, 4,
            4, 4, 0).encode()).sizes());
  }
}
