package dev.pekkordma.samples.perf;

import java.util.Arrays;
import java.util.Locale;

/**
 * One line of a latency test, with perftest's meanings: each sample is the time from one
 * iteration's post to the next one's, halved for send and write (a round trip of two one-way
 * messages) and whole for read; the two largest samples are dropped from the average, the
 * deviation and the median (typical); max is the second largest sample; the percentiles index
 * the sorted samples.
 */
public record LatResult(int size, long iterations, double minUs, double maxUs, double typicalUs,
    double averageUs, double stdevUs, double p99Us, double p999Us) {
  public static final String HEADER = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"
      + "    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
  /** Samples dropped from the top, as perftest does. */
  static final int TAIL = 2;

  /** From {@code posted[0..n)}, the post time of each iteration in nanoseconds. */
  public static LatResult of(int size, int n, long[] posted, int rttFactor) {
    int samples = n - 1;
    long[] d = new long[samples];
    for (int i = 0; i < samples; i++) d[i] = posted[i + 1] - posted[i];
    Arrays.sort(d);
    int cnt = samples - TAIL;
    double f = 1000.0 * rttFactor; // ns -> us, per one-way trip
    double median = cnt % 2 == 0 ? (d[cnt / 2] + d[cnt / 2 - 1]) / 2.0 : d[cnt / 2];
    double sum = 0;
    for (int i = 0; i < cnt; i++) sum += d[i] / f;
    double avg = sum / cnt;
    double var = 0;
    for (int i = 0; i < cnt; i++) {
      double x = d[i] / f - avg;
      var += x * x;
    }
    int i99 = (int) Math.ceil(cnt * 0.99);
    int i999 = (int) Math.ceil(cnt * 0.999);
    return new LatResult(size, n, d[0] / f, d[cnt] / f, median / f, avg, Math.sqrt(var / cnt),
        d[i99] / f, d[i999] / f);
  }

  /** The result line, under {@link #HEADER}. */
  public String line() {
    return String.format(Locale.ROOT,
        " %-7d %-10d       %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f",
        size, iterations, minUs, maxUs, typicalUs, averageUs, stdevUs, p99Us, p999Us);
  }
}
