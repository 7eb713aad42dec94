package dev.pekkordma.samples.perf;

import java.util.Locale;

/**
 * One line of a bandwidth test, with perftest's meanings: MB is 2^20 bytes; the average runs from
 * the first post to the last completion; the peak is the best rate over any run of requests from
 * a post to a signaled completion; the message rate is requests per second in millions.
 */
public record BwResult(int size, long iterations, double peakMBps, double averageMBps,
    double msgRateMpps) {
  public static final String HEADER = header(false);

  /** The header, bandwidths in Gb/s ({@code gbits}: perftest's --report_gbits) or MB/s. */
  static String header(boolean gbits) {
    String unit = gbits ? "Gb/sec" : "MB/sec";
    return " #bytes     #iterations    BW peak[" + unit + "]    BW average[" + unit
        + "]   MsgRate[Mpps]";
  }

  /** {@code mbps} (MB of 2^20 bytes a second) in Gb/s, as perftest reports them. */
  static double gbits(double mbps) {
    return mbps * 1048576.0 * 8 / 1e9;
  }

  /**
   * From the timestamps of a run: {@code posted[i]} when request i was posted, {@code
   * completed[j]} when the completion of signaled request j was polled (requests j with {@code
   * signaled(j)}).
   */
  static BwResult of(int size, int n, long[] posted, long[] completed, int cqModeration) {
    long[] doneAt = new long[n];
    long[] doneTime = new long[n];
    int events = 0;
    for (int j = 0; j < n; j++) {
      if (!signaled(j, cqModeration, n)) continue;
      doneAt[events] = j + 1;
      doneTime[events++] = completed[j];
    }
    return of(size, n, posted, doneAt, doneTime, events);
  }

  /**
   * From the timestamps of a run of {@code n} requests over any number of QPs: {@code posted[i]}
   * when the i-th request was posted; completion event e (a polled signaled completion) found
   * {@code doneAt[e]} requests complete in all at {@code doneTime[e]}. The peak, as perftest's,
   * is the best rate from any post to any later completion event.
   */
  static BwResult of(int size, long n, long[] posted, long[] doneAt, long[] doneTime,
      int events) {
    double seconds = (doneTime[events - 1] - posted[0]) / 1e9;
    double best = Double.MAX_VALUE; // nanoseconds per request, over the best run
    int first = 0; // the first event that completes beyond post i
    for (int i = 0; i < n; i++) {
      if (i > 0 && posted[i] == posted[i - 1]) continue; // same batch: the first one is better
      while (first < events && doneAt[first] <= i) first++;
      for (int e = first; e < events; e++) {
        double t = (double) (doneTime[e] - posted[i]) / (doneAt[e] - i);
        if (t < best) best = t;
      }
    }
    double bytes = (double) size * n;
    double avg = bytes / seconds / 1048576.0;
    double peak = best <= 0 ? avg : size / (best / 1e9) / 1048576.0;
    return new BwResult(size, n, Math.max(peak, avg), avg, n / seconds / 1e6);
  }

  /**
   * A timed run (perftest's -D): {@code iterations} requests completed in {@code nanos}. As
   * perftest's, a timed run does not measure the peak (0).
   */
  static BwResult timed(int size, long iterations, long nanos) {
    if (iterations <= 0 || nanos <= 0) return new BwResult(size, iterations, 0, 0, 0);
    double seconds = nanos / 1e9;
    return new BwResult(size, iterations, 0, (double) size * iterations / seconds / 1048576.0,
        iterations / seconds / 1e6);
  }

  /** Both directions of a bidirectional run, as perftest adds them: #iterations stays ours. */
  BwResult plus(BwResult peer) {
    return new BwResult(size, iterations, peakMBps + peer.peakMBps,
        averageMBps + peer.averageMBps, msgRateMpps + peer.msgRateMpps);
  }

  /** Request j is signaled: every {@code cqModeration}-th one and the last. */
  static boolean signaled(long j, int cqModeration, long n) {
    return (j + 1) % cqModeration == 0 || j == n - 1;
  }

  /** The result line, under {@link #HEADER}. */
  public String line() {
    return line(false);
  }

  /** The result line, under {@link #header}: bandwidths in Gb/s when {@code gbits}. */
  public String line(boolean gbits) {
    return String.format(Locale.ROOT, " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f",
        size, iterations, gbits ? gbits(peakMBps) : peakMBps,
        gbits ? gbits(averageMBps) : averageMBps, msgRateMpps);
  }
}
