package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.ByteSize;
import dev.pekkordma.verbs.QpType;
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

  @Option(names = {"-r", "--rx-depth"}, paramLabel = "N",
      description = "Receives kept posted per QP in send tests (default: 512; UC and UD send"
          + " bandwidth: the iterations, at most 16,000, as perftest: they have no RNR retry).")
  Integer rxDepth;

  @Option(names = {"-Q", "--cq-mod"}, paramLabel = "N",
      description = "Signal one send request in N (default: 100, at most --tx-depth).")
  Integer cqMod;

  @Option(names = {"-I", "--inline-size"}, paramLabel = "BYTES",
      description = "Post messages up to this size inline (default, as perftest's: 236 for"
          + " send_lat, 220 for write_lat, 0 otherwise).")
  Integer inlineSize;

  @Option(names = {"-D", "--duration"}, paramLabel = "SECONDS",
      description = "Bandwidth tests: run each size for this long instead of -n iterations, as"
          + " perftest's -D: the first and last --margin seconds are not measured (a warm-up"
          + " and a cool-down under the same load), BW peak is not measured (0.00), the"
          + " iterations are the requests completed in between. Not for latency tests, nor"
          + " with -n or --warmup.")
  Integer duration;

  @Option(names = {"-f", "--margin"}, paramLabel = "SECONDS",
      description = "With -D: seconds at each end left out of the measurement (default:"
          + " a quarter of -D, rounded down, as perftest; -D must be more than twice it).")
  Integer margin;

  @Option(names = {"-q", "--qp"}, paramLabel = "N", defaultValue = "1",
      description = "Bandwidth tests: this many QPs per side, each making -n requests with its"
          + " own --tx-depth, as perftest's -q; the results are their sum (default:"
          + " ${DEFAULT-VALUE}). Latency tests use one.")
  int qps;

  @Option(names = {"-b", "--bidirectional"},
      description = "Bandwidth tests: both sides send at once; the figures are the sum of both"
          + " directions, as perftest's -b (#iterations stays this side's).")
  boolean bidirectional;

  @Option(names = {"-c", "--connection"}, paramLabel = "TYPE", defaultValue = "RC",
      description = "Transport: RC, UC or UD (default: ${DEFAULT-VALUE}). UC has no RDMA READ;"
          + " UD sends only, each message at most the path MTU. UC and UD run in-process"
          + " only (rdma_cm connects RC here).")
  QpType connection;

  @Option(names = {"--report_gbits", "--report-gbits"},
      description = "Bandwidth in Gb/s instead of MB/s, as perftest's --report_gbits.")
  boolean reportGbits;

  @Option(names = {"--out_json", "--out-json"}, paramLabel = "FILE",
      description = "Also write the results to FILE as JSON (perftest's --out_json; one entry"
          + " per size).")
  java.nio.file.Path outJson;

  /** The results as JSON in --out_json's file, if one was given (whole or not at all). */
  void writeJson(String provider, PerfRun.Outcome o) {
    if (outJson == null) return;
    try {
      java.nio.file.Path dir = outJson.toAbsolutePath().getParent();
      java.nio.file.Path tmp = java.nio.file.Files.createTempFile(dir, ".rdma-perf", ".json");
      java.nio.file.Files.writeString(tmp, PerfJson.of(o.spec(), provider, reportGbits, o));
      java.nio.file.Files.move(tmp, outJson, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    } catch (java.io.IOException e) {
      throw new PerfFailure("--out_json " + outJson + ": " + e.getMessage());
    }
  }

  PerfSpec spec() {
    PerfTest t = test;
    int[] s = sizes(t);
    checkConnection(t);
    int seconds = duration(t);
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
    int rx = rxDepth != null ? rxDepth : defaultRxDepth(t, iterations, seconds);
    if (rx < 1 || rx > RdmaPerf.MAX_DEPTH) {
      throw new BadOption("-r/--rx-depth must be in [1, " + RdmaPerf.MAX_DEPTH + "], was " + rx);
    }
    if (qps < 1 || qps > RdmaPerf.MAX_QPS) {
      throw new BadOption("-q/--qp must be in [1, " + RdmaPerf.MAX_QPS + "], was " + qps);
    }
    if (qps > 1 && !t.bandwidth()) {
      throw new BadOption("-q/--qp " + qps + ": " + t.label() + " is a latency test, which uses"
          + " one QP (multiple QPs only in bandwidth tests, as perftest)");
    }
    if (seconds == 0 && (long) iterations * qps > RdmaPerf.MAX_ITERATIONS) {
      throw new BadOption("-n/--iters " + iterations + " on -q/--qp " + qps + " QPs makes "
          + (long) iterations * qps + " requests: at most " + RdmaPerf.MAX_ITERATIONS);
    }
    if (bidirectional && !t.bandwidth()) {
      throw new BadOption("-b/--bidirectional: " + t.label() + " is a latency test (both sides"
          + " send in it already); -b is for bandwidth tests");
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
    // perftest's defaults: UD's send header leaves less room
    int inline = inlineSize != null ? inlineSize
        : t == PerfTest.SEND_LAT ? (connection == QpType.UD ? 188 : 236)
            : t == PerfTest.WRITE_LAT ? 220 : 0;
    if (inline < 0 || inline > 65535) {
      throw new BadOption("-I/--inline-size must be in [0, 65535], was " + inline);
    }
    int m = margin(seconds);
    return new PerfSpec(t, s, iterations, w, txDepth, rx, mod, inline, qps, seconds, m,
        bidirectional, connection);
  }

  /** UC and UD drop what finds no receive: perftest posts one for every iteration it can. */
  private int defaultRxDepth(PerfTest t, int iterations, int seconds) {
    boolean unreliable = connection != QpType.RC;
    if (unreliable && t == PerfTest.SEND_BW && seconds == 0) return Math.min(iterations, 16_000);
    return 512;
  }

  private void checkConnection(PerfTest t) {
    if (connection.allows(t.verb().opcode)) return;
    String why = connection == QpType.UD ? "UD carries sends only"
        : "UC has no RDMA READ";
    throw new BadOption("-c/--connection " + connection + ": " + t.label() + " needs "
        + t.verb().opcode + ", and " + why + " (as perftest: UC runs send and write tests, UD"
        + " send tests)");
  }

  /** -D's seconds, or 0 for a count of iterations. */
  private int duration(PerfTest t) {
    if (duration == null) {
      if (margin != null) throw new BadOption("-f/--margin goes with -D/--duration");
      return 0;
    }
    if (!t.bandwidth()) {
      throw new BadOption("-D/--duration: " + t.label() + " is a latency test, which counts"
          + " iterations (-n); -D is for bandwidth tests");
    }
    if (iters != null) {
      throw new BadOption("-D/--duration and -n/--iters exclude each other: give one (a run"
          + " is timed or counted; perftest's -D ignores -n)");
    }
    if (warmup != null) {
      throw new BadOption("-D/--duration and --warmup exclude each other: a timed run warms up"
          + " in its first -f/--margin seconds");
    }
    if (duration < 1 || duration > RdmaPerf.MAX_DURATION) {
      throw new BadOption("-D/--duration must be in [1, " + RdmaPerf.MAX_DURATION + "] seconds,"
          + " was " + duration);
    }
    return duration;
  }

  private int margin(int seconds) {
    if (seconds == 0) return 0;
    int m = margin != null ? margin : seconds / 4;
    if (m < 0 || seconds <= 2 * m) {
      throw new BadOption("-f/--margin " + m + ": -D/--duration " + seconds + " must be more"
          + " than twice the margin (the measured part is -D minus twice -f)");
    }
    return m;
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
