package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.ByteSize;
import java.util.List;
import java.util.TreeSet;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** What to measure: the options shared by the in-process run and the client. */
final class PerfOptions {
  @Parameters(index = "0", arity = "0..1", paramLabel = "TEST", defaultValue = "write_bw",
      description = "send_bw, write_bw, read_bw, send_lat, write_lat or read_lat"
          + " (default: ${DEFAULT-VALUE}).")
  PerfTest test;

  @Option(names = {"-s", "--size"}, paramLabel = "BYTES", converter = ByteSize.Converter.class,
      description = "Message size, e.g. 2, 4k, 64k, 1m (default: 65536 for bandwidth, 2 for"
          + " latency).")
  Long size;

  @Option(names = {"-a", "--all"},
      description = "Every power of two from 2 bytes to 8 MiB (8m).")
  boolean all;

  @Option(names = "--sizes", paramLabel = "LIST", split = ",",
      converter = ByteSize.Converter.class,
      description = "Several message sizes, e.g. 4k,64k,1m (run in ascending order).")
  List<Long> sizes;

  @Option(names = {"-n", "--iters"}, paramLabel = "N",
      description = "Measured iterations per size (default: 5000 for bandwidth, 1000 for"
          + " latency, as perftest).")
  Integer iters;

  @Option(names = "--warmup", paramLabel = "N",
      description = "Unmeasured iterations before each size (default: enough for the JIT:"
          + " 50,000 (latency: 10,000) or 256 MiB before the first size, 1,000 or 64 MiB"
          + " before the others, at least 10).")
  Integer warmup;

  @Option(names = {"-t", "--tx-depth"}, paramLabel = "N", defaultValue = "128",
      description = "Most requests in flight in bandwidth tests (default: ${DEFAULT-VALUE}).")
  int txDepth;

  @Option(names = {"-r", "--rx-depth"}, paramLabel = "N", defaultValue = "512",
      description = "Receives kept posted in send tests (default: ${DEFAULT-VALUE}).")
  int rxDepth;

  @Option(names = {"-Q", "--cq-mod"}, paramLabel = "N",
      description = "Signal one send request in N (default: 100, at most --tx-depth).")
  Integer cqMod;

  @Option(names = {"-I", "--inline-size"}, paramLabel = "BYTES",
      description = "Post messages up to this size inline (default, as perftest's: 236 for"
          + " send_lat, 220 for write_lat, 0 otherwise).")
  Integer inlineSize;

  @Option(names = {"--report_gbits", "--report-gbits"},
      description = "Bandwidth in Gb/s instead of MB/s, as perftest's --report_gbits.")
  boolean reportGbits;

  @Option(names = {"--out_json", "--out-json"}, paramLabel = "FILE",
      description = "Also write the results to FILE as JSON (perftest's --out_json; one entry"
          + " per size).")
  java.nio.file.Path outJson;

  /** The results as JSON in --out_json's file, if one was given. */
  void writeJson(PerfSpec spec, String provider, PerfRun.Outcome o) {
    if (outJson == null) return;
    try {
      java.nio.file.Files.writeString(outJson, PerfJson.of(spec, provider, reportGbits, o));
    } catch (java.io.IOException e) {
      throw new PerfFailure("--out_json " + outJson + ": " + e.getMessage());
    }
  }

  PerfSpec spec() {
    PerfTest t = test;
    int[] s = sizes(t);
    int iterations = iters != null ? iters : t.bandwidth() ? 5000 : 1000;
    if (iterations < (t.bandwidth() ? 1 : 5) || iterations > RdmaPerf.MAX_ITERATIONS) {
      throw new BadOption("-n/--iters must be in [" + (t.bandwidth() ? 1 : 5) + ", "
          + RdmaPerf.MAX_ITERATIONS + "]" + (t.bandwidth() ? "" : " for a latency test") + ", was "
          + iterations);
    }
    int w = warmup == null ? PerfSpec.AUTO_WARMUP : warmup;
    if (warmup != null && (w < 0 || w > RdmaPerf.MAX_ITERATIONS)) {
      throw new BadOption("--warmup must be in [0, " + RdmaPerf.MAX_ITERATIONS + "], was " + w);
    }
    if (txDepth < 1 || txDepth > RdmaPerf.MAX_DEPTH) {
      throw new BadOption("-t/--tx-depth must be in [1, " + RdmaPerf.MAX_DEPTH + "], was " + txDepth);
    }
    if (rxDepth < 1 || rxDepth > RdmaPerf.MAX_DEPTH) {
      throw new BadOption("-r/--rx-depth must be in [1, " + RdmaPerf.MAX_DEPTH + "], was " + rxDepth);
    }
    int mod;
    if (cqMod == null) {
      mod = t.bandwidth() ? Math.min(100, txDepth) : 100;
    } else {
      mod = cqMod;
      int most = t.bandwidth() ? txDepth : 1024;
      if (mod < 1 || mod > most) {
        throw new BadOption("-Q/--cq-mod must be in [1, " + most + "]"
            + (t.bandwidth() ? " (at most --tx-depth)" : "") + ", was " + mod);
      }
    }
    int inline = inlineSize != null ? inlineSize
        : t == PerfTest.SEND_LAT ? 236 : t == PerfTest.WRITE_LAT ? 220 : 0;
    if (inline < 0 || inline > 65535) {
      throw new BadOption("-I/--inline-size must be in [0, 65535], was " + inline);
    }
    return new PerfSpec(t, s, iterations, w, txDepth, rxDepth, mod, inline);
  }

  private int[] sizes(PerfTest t) {
    int given = (all ? 1 : 0) + (size != null ? 1 : 0) + (sizes != null ? 1 : 0);
    if (given > 1) {
      throw new BadOption("-a/--all, -s/--size and --sizes exclude each other: give one");
    }
    long most = t.bandwidth() ? RdmaPerf.MAX_BW_SIZE : RdmaPerf.MAX_LAT_SIZE;
    if (all) return PerfSpec.ALL_SIZES.clone();
    if (sizes != null) {
      TreeSet<Long> sorted = new TreeSet<>(sizes);
      int[] r = new int[sorted.size()];
      int i = 0;
      for (long v : sorted) {
        if (v > most) {
          throw new BadOption("--sizes: " + ByteSize.format(v) + " is too large: at most "
              + ByteSize.format(most) + " for " + t.label());
        }
        r[i++] = (int) v;
      }
      return r;
    }
    long v = size != null ? size : t.bandwidth() ? 65536 : 2;
    if (v > most) {
      throw new BadOption("-s/--size " + ByteSize.format(v) + " is too large: at most "
          + ByteSize.format(most) + " for " + t.label());
    }
    return new int[] {(int) v};
  }
}
