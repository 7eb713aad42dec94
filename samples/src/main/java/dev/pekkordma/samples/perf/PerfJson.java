package dev.pekkordma.samples.perf;

import java.util.Locale;

/**
 * A run's results as JSON, for scripts (perftest's --out_json): the test, the provider, how it
 * ran (qps, connection, bidirectional, duration and margin in seconds: 0 for a counted run), the
 * unit, and one object per size with perftest's names (BW_peak, BW_average, MsgRate; t_min,
 * t_max, t_typical, t_avg, t_stdev, percentile_99, percentile_99_9). A bidirectional run's
 * figures are both directions' sum, as printed.
 */
final class PerfJson {
  private PerfJson() {}

  static String of(PerfSpec spec, String provider, boolean gbits, PerfRun.Outcome o) {
    StringBuilder b = new StringBuilder();
    b.append("{\n  \"test\": \"").append(spec.test().name().toLowerCase(Locale.ROOT))
        .append("\",\n  \"provider\": \"").append(provider).append("\",\n");
    b.append("  \"qps\": ").append(spec.qps()).append(",\n  \"connection\": \"")
        .append(spec.connection()).append("\",\n  \"bidirectional\": ")
        .append(spec.bidirectional()).append(",\n  \"duration\": ").append(spec.duration())
        .append(",\n  \"margin\": ").append(spec.margin()).append(",\n");
    if (spec.test().bandwidth()) {
      b.append("  \"unit\": \"").append(gbits ? "Gb/sec" : "MB/sec").append("\",\n");
    } else {
      b.append("  \"unit\": \"usec\",\n");
    }
    b.append("  \"results\": [");
    String sep = "\n";
    for (BwResult r : o.bandwidth()) {
      b.append(sep).append(String.format(Locale.ROOT, "    {\"bytes\": %d, \"iterations\": %d,"
          + " \"BW_peak\": %.2f, \"BW_average\": %.2f, \"MsgRate\": %.6f}", r.size(),
          r.iterations(), gbits ? BwResult.gbits(r.peakMBps()) : r.peakMBps(),
          gbits ? BwResult.gbits(r.averageMBps()) : r.averageMBps(), r.msgRateMpps()));
      sep = ",\n";
    }
    for (LatResult r : o.latency()) {
      b.append(sep).append(String.format(Locale.ROOT, "    {\"bytes\": %d, \"iterations\": %d,"
          + " \"t_min\": %.2f, \"t_max\": %.2f, \"t_typical\": %.2f, \"t_avg\": %.2f,"
          + " \"t_stdev\": %.2f, \"percentile_99\": %.2f, \"percentile_99_9\": %.2f}",
          r.size(), r.iterations(), r.minUs(), r.maxUs(), r.typicalUs(), r.averageUs(),
          r.stdevUs(), r.p99Us(), r.p999Us()));
      sep = ",\n";
    }
    return b.append("\n  ]\n}\n").toString();
  }
}
