package dev.pekkordma.benchmarks;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Reads the outputs of one bench/run.sh run (rdma-perf's {@code --out_json} files, perftest's and
 * the stream benchmark's text in perftest's layout), prints each comparison side by side with its
 * ratio and target, and draws bandwidth against message size for every bandwidth series as one
 * PNG.
 *
 * <p>A file may hold several runs of the same sizes: the best of them counts (highest bandwidth,
 * lowest typical latency), on both sides of a comparison alike. When both sides ran as often
 * (bench/run.sh's rounds run them one after the other), the ratio of each round is printed too,
 * with their median: on a machine whose load drifts, a pair from one round shares that load,
 * where the two bests may come from different rounds.
 *
 * <p>The run's {@code manifest.tsv} says what to read and compare, one line each:
 *
 * <pre>
 * series   LABEL  FILE
 * compare  SECTION  NUMERATOR  DENOMINATOR  bw|lat  TARGET|-  TARGET_SIZE|-
 * note     SECTION  TEXT
 * </pre>
 *
 * A series FILE is a text output, or a directory of rdma-perf's JSON files, one a run, read in
 * the order of their names (bench/run.sh numbers them as they run).
 *
 * For {@code bw} the ratio is numerator over denominator of BW average and the target is a
 * minimum at TARGET_SIZE; for {@code lat} it is numerator over denominator of t_typical and the
 * target a maximum.
 */
public final class BenchReport {
  /**
   * One parsed line (the best of the runs for its size): size, the columns after #iterations;
   * the compared figure of every run, in the file's order; and the CPU time both ends spent per
   * message in each run that printed it (StreamBench's "CPU per message" line), in microseconds.
   */
  record Row(long size, long iterations, double[] values, double[] eachRun, double[] cpuEachRun) {
    int runs() {
      return eachRun.length;
    }

    /** The median of the runs' CPU per message, NaN when none printed it. */
    double cpu() {
      return cpuEachRun.length == 0 ? Double.NaN : median(cpuEachRun);
    }
  }

  /** A parsed output: bandwidth or latency rows by size. */
  record Series(String label, boolean bandwidth, TreeMap<Long, Row> rows) {}

  private BenchReport() {}

  public static void main(String[] args) throws IOException {
    System.setProperty("java.awt.headless", "true");
    if (args.length < 1) {
      System.err.println("usage: BenchReport RUN_DIRECTORY   (with manifest.tsv in it)");
      System.exit(2);
    }
    Path dir = Path.of(args[0]);
    System.exit(report(dir, System.out));
  }

  static int report(Path dir, PrintStream out) throws IOException {
    Map<String, Series> series = new LinkedHashMap<>();
    Map<String, List<String>> sections = new LinkedHashMap<>();
    for (String line : Files.readAllLines(dir.resolve("manifest.tsv"), StandardCharsets.UTF_8)) {
      if (line.isBlank() || line.startsWith("#")) continue;
      String[] f = line.split("\t");
      switch (f[0]) {
        case "series": {
          Path file = dir.resolve(f[2]);
          Series s = Files.exists(file) ? parse(f[1], file) : null;
          if (s != null) series.put(f[1], s);
          break;
        }
        case "compare":
        case "note":
          sections.computeIfAbsent(f[1], k -> new ArrayList<>()).add(line);
          break;
        default:
          throw new IOException("manifest.tsv: unknown line '" + line + "'");
      }
    }
    for (Map.Entry<String, List<String>> e : sections.entrySet()) {
      out.println();
      out.println("== " + e.getKey());
      for (String line : e.getValue()) {
        String[] f = line.split("\t");
        if (f[0].equals("note")) {
          out.println("   " + f[2]);
        } else {
          compare(out, series.get(f[2]), f[2], series.get(f[3]), f[3], f[4].equals("bw"),
              f[5].equals("-") ? Double.NaN : Double.parseDouble(f[5]),
              f[6].equals("-") ? -1 : Long.parseLong(f[6]));
        }
      }
    }
    Path png = dir.resolve("throughput.png");
    if (chart(series, png)) {
      out.println();
      out.println("chart: " + png);
    }
    return 0;
  }

  private static void compare(PrintStream out, Series num, String numLabel, Series den,
      String denLabel, boolean bw, double target, long targetSize) {
    out.println();
    if (num == null || den == null) {
      out.println("   " + numLabel + " vs " + denLabel + ": no figures for "
          + (num == null ? numLabel : denLabel) + " (not run or failed: see its file)");
      return;
    }
    String unit = bw ? "BW average[MB/sec]" : "t_typical[usec]";
    out.printf(Locale.ROOT, "   %-10s %-12s %24s %24s %8s  %s%n", "#bytes", "#iterations",
        numLabel, denLabel, "ratio", "target");
    out.printf(Locale.ROOT, "   %-10s %-12s %24s %24s%n", "", "", unit, unit);
    int runs = Math.min(num.rows().firstEntry().getValue().runs(),
        den.rows().firstEntry().getValue().runs());
    for (Map.Entry<Long, Row> e : num.rows().entrySet()) {
      Row d = den.rows().get(e.getKey());
      if (d == null) continue;
      double a = value(e.getValue(), bw);
      double b = value(d, bw);
      double ratio = a / b; // both positive: rows without a figure are not kept
      String verdict = "";
      if (e.getKey() == targetSize) {
        boolean met = bw ? ratio >= target : ratio <= target;
        verdict = String.format(Locale.ROOT, "%s %.2f: %s", bw ? ">=" : "<=", target,
            met ? "met" : "NOT met");
      }
      out.printf(Locale.ROOT, "   %-10d %-12d %24.2f %24.2f %8.2f  %s%n", e.getKey(),
          e.getValue().iterations(), a, b, ratio, verdict);
      double[] rounds = roundRatios(e.getValue(), d);
      if (rounds.length > 1) {
        StringBuilder each = new StringBuilder();
        for (double r : rounds) each.append(String.format(Locale.ROOT, " %.2f", r));
        out.printf(Locale.ROOT, "   %-10s round by round:%s; median %.2f%n", "", each,
            median(rounds));
      }
      double cpuA = e.getValue().cpu();
      double cpuB = d.cpu();
      if (!Double.isNaN(cpuA) && !Double.isNaN(cpuB)) {
        out.printf(Locale.ROOT, "   %-10s CPU per message, both ends (median of runs): %.2f us"
            + " against %.2f us, ratio %.2f%n", "", cpuA, cpuB, cpuA / cpuB);
      }
    }
    if (runs > 1) out.println("   (each figure the best of " + runs + " runs)");
  }

  /** Each round's ratio, when both sides have one figure per round; else none. */
  static double[] roundRatios(Row num, Row den) {
    if (num.runs() != den.runs()) return new double[0];
    double[] r = new double[num.runs()];
    for (int i = 0; i < r.length; i++) r[i] = num.eachRun()[i] / den.eachRun()[i];
    return r;
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int m = s.length / 2;
    return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  /** BW average, or t_typical. */
  static double value(Row r, boolean bw) {
    return value(r.values(), bw);
  }

  private static double value(double[] columns, boolean bw) {
    return bw ? columns[1] : columns[2];
  }

  /**
   * Reads a series: the result lines under perftest's header, or a directory of rdma-perf's
   * JSON files; null when there are none.
   */
  static Series parse(String label, Path file) throws IOException {
    if (Files.isDirectory(file)) return parseJson(label, file);
    Boolean bandwidth = null;
    TreeMap<Long, Row> rows = new TreeMap<>();
    long lastSize = -1; // the size of the result line just read, which a CPU line follows
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      String t = line.trim();
      if (t.startsWith("#bytes")) {
        bandwidth = t.contains("BW average");
        continue;
      }
      if (t.startsWith(CPU_LINE) && rows.containsKey(lastSize)) {
        addCpu(rows, lastSize, cpuPerMessage(t));
        lastSize = -1;
        continue;
      }
      if (bandwidth == null || t.isEmpty() || !Character.isDigit(t.charAt(0))) continue;
      String[] f = t.split("\\s+");
      int columns = bandwidth ? 5 : 9;
      if (f.length < columns) continue;
      try {
        double[] v = new double[columns - 2];
        for (int i = 0; i < v.length; i++) v[i] = Double.parseDouble(f[i + 2]);
        add(rows, Long.parseLong(f[0]), Long.parseLong(f[1]), v, bandwidth);
        lastSize = Long.parseLong(f[0]);
      } catch (NumberFormatException e) {
        // not a result line
      }
    }
    return rows.isEmpty() ? null : new Series(label, bandwidth, rows);
  }

  /** What begins StreamBench's line of CPU time per message, below a result line. */
  static final String CPU_LINE = "CPU per message :";

  /**
   * Both ends' CPU time per message in microseconds, from "client A us, server B us" (A + B) or
   * "A us (this JVM, both ends)" (A).
   */
  static double cpuPerMessage(String line) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+(?:\\.\\d+)?) us")
        .matcher(line);
    double sum = 0;
    while (m.find()) sum += Double.parseDouble(m.group(1));
    return sum;
  }

  private static void addCpu(TreeMap<Long, Row> rows, long size, double cpu) {
    Row r = rows.get(size);
    double[] each = Arrays.copyOf(r.cpuEachRun(), r.cpuEachRun().length + 1);
    each[each.length - 1] = cpu;
    rows.put(size, new Row(r.size(), r.iterations(), r.values(), r.eachRun(), each));
  }

  /** perftest's text columns after #iterations, by their --out_json names. */
  private static final String[] BW_FIELDS = {"BW_peak", "BW_average", "MsgRate"};
  private static final String[] LAT_FIELDS = {"t_min", "t_max", "t_typical", "t_avg", "t_stdev",
      "percentile_99", "percentile_99_9"};

  /**
   * rdma-perf's --out_json files in {@code dir}, one a run, in name order: the same columns as
   * the text has (bandwidth in MB/s, as there).
   */
  static Series parseJson(String label, Path dir) throws IOException {
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      // not rdma-perf's temporary files (a name starting with a dot), which it renames whole
      files = s.filter(f -> f.getFileName().toString().endsWith(".json")
          && !f.getFileName().toString().startsWith(".")).sorted().toList();
    }
    Boolean bandwidth = null;
    TreeMap<Long, Row> rows = new TreeMap<>();
    for (Path f : files) {
      try {
        Config run = ConfigFactory.parseString(Files.readString(f, StandardCharsets.UTF_8));
        String unit = run.getString("unit");
        boolean bw = !unit.equals("usec");
        if (bandwidth != null && bandwidth != bw) {
          throw new IOException(f + ": a " + (bw ? "bandwidth" : "latency") + " run among "
              + (bw ? "latency" : "bandwidth") + " runs");
        }
        bandwidth = bw;
        // Gb/s (--report_gbits) back to perftest's MB of 2^20 bytes a second
        double toMBps = unit.equals("Gb/sec") ? 1e9 / 8 / 1048576.0 : 1;
        String[] names = bw ? BW_FIELDS : LAT_FIELDS;
        for (Config r : run.getConfigList("results")) {
          double[] v = new double[names.length];
          for (int i = 0; i < v.length; i++) {
            v[i] = r.getDouble(names[i]) * (bw && i < 2 ? toMBps : 1);
          }
          add(rows, r.getLong("bytes"), r.getLong("iterations"), v, bw);
        }
      } catch (ConfigException e) {
        throw new IOException(f + ": not rdma-perf's --out_json: " + e.getMessage(), e);
      }
    }
    return rows.isEmpty() ? null : new Series(label, bandwidth, rows);
  }

  /** Adds one run's figures for {@code size}; of repeated runs the best one stands. */
  private static void add(TreeMap<Long, Row> rows, long size, long iterations, double[] v,
      boolean bandwidth) {
    Row row = new Row(size, iterations, v, new double[] {value(v, bandwidth)}, new double[0]);
    if (value(row, bandwidth) <= 0) return; // perftest's 0.00: no measurement
    Row seen = rows.get(size);
    if (seen != null) {
      // repeated runs: the best one stands (highest bandwidth, lowest typical latency)
      boolean better = bandwidth ? value(row, true) > value(seen, true)
          : value(row, false) < value(seen, false);
      Row best = better ? row : seen;
      double[] each = Arrays.copyOf(seen.eachRun(), seen.runs() + 1);
      each[seen.runs()] = value(row, bandwidth);
      row = new Row(size, best.iterations(), best.values(), each, seen.cpuEachRun());
    }
    rows.put(size, row);
  }

  /** Bandwidth against size for every bandwidth series; false when there is none. */
  static boolean chart(Map<String, Series> series, Path png) throws IOException {
    XYChart chart = new XYChartBuilder().width(1100).height(640)
        .title("Throughput against message size (BW average, MB = 2^20 bytes; native-* and"
            + " perftest-* ran in the emulated VM)")
        .xAxisTitle("message / chunk size [bytes]").yAxisTitle("MB/sec").build();
    chart.getStyler().setXAxisLogarithmic(true);
    chart.getStyler().setYAxisLogarithmic(true);
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
    int n = 0;
    for (Series s : series.values()) {
      if (!s.bandwidth()) continue;
      double[] x = new double[s.rows().size()];
      double[] y = new double[x.length];
      int i = 0;
      for (Row r : s.rows().values()) {
        x[i] = r.size();
        y[i] = Math.max(value(r, true), 1e-3);
        i++;
      }
      XYSeries xy = chart.addSeries(s.label(), x, y);
      xy.setMarker(SeriesMarkers.CIRCLE);
      n++;
    }
    if (n == 0) return false;
    String name = png.toString();
    BitmapEncoder.saveBitmap(chart, name.substring(0, name.length() - 4),
        BitmapEncoder.BitmapFormat.PNG);
    return true;
  }
}
