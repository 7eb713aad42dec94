package dev.pekkordma.benchmarks;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The scaling runs of {@link ScaleBench} side by side: for each N, Tcp's figures, the streams
 * layer's, and their ratio; then scale.png, connect time and echo rate against N.
 * Arguments: the directory, the Tcp TSV file name, the RDMA one, then optionally framed Tcp's,
 * the two references' without a transport ({@code in-jvm}, {@code none}, one JVM by nature) and
 * the RDMA one with both ends in one JVM (an extra, not a deployment's shape).
 */
public final class ScaleReport {
  private ScaleReport() {}

  public static void main(String[] args) throws IOException {
    Path dir = Path.of(args[0]);
    Map<Integer, ScaleBench.Result> tcp = read(dir.resolve(args[1]));
    Map<Integer, ScaleBench.Result> rdma = read(dir.resolve(args[2]));
    Map<Integer, ScaleBench.Result> framed = args.length > 3 ? read(dir.resolve(args[3]))
        : new TreeMap<>();
    Map<Integer, ScaleBench.Result> inJvm = args.length > 4 ? read(dir.resolve(args[4]))
        : new TreeMap<>();
    Map<Integer, ScaleBench.Result> none = args.length > 5 ? read(dir.resolve(args[5]))
        : new TreeMap<>();
    Map<Integer, ScaleBench.Result> oneJvm = args.length > 6 ? read(dir.resolve(args[6]))
        : new TreeMap<>();
    print(tcp, rdma, System.out);
    printAgainst("tcp-framed", "Tcp + Framing.simpleFramingProtocol: message boundaries, as ours",
        framed, rdma, System.out);
    printAgainst("in-jvm", "no transport: Pekko's asynchronous boundaries between the client's"
        + " island and the server's, message boundaries kept", inJvm, rdma, System.out);
    printAgainst("none", "no connection: the benchmark's client alone, its source and its fold;"
        + " no transport can be faster", none, rdma, System.out);
    printAgainst("rdma-one-jvm", "the streams layer with both ends in one JVM: not a"
        + " deployment's shape", oneJvm, rdma, System.out);
    printCeiling(tcp, none, inJvm, System.out);
    Path png = dir.resolve("scale.png");
    chart(Map.of("pekko-tcp", tcp, "rdma-streams", rdma, "tcp-framed", framed,
        "in-jvm (no transport)", inJvm, "none (the client alone)", none), png);
    System.out.println("chart: " + png);
  }

  static Map<Integer, ScaleBench.Result> read(Path file) throws IOException {
    Map<Integer, ScaleBench.Result> byN = new TreeMap<>();
    if (!Files.exists(file)) return byN;
    for (String line : Files.readAllLines(file)) {
      if (line.isBlank()) continue;
      ScaleBench.Result r = ScaleBench.Result.parse(line);
      ScaleBench.Result best = byN.get(r.n());
      // repeated runs: the one that opened most, then the quicker
      if (best == null || r.opened() > best.opened()
          || r.opened() == best.opened() && r.echoRate() > best.echoRate()) {
        byN.put(r.n(), r);
      }
    }
    return byN;
  }

  static void print(Map<Integer, ScaleBench.Result> tcp, Map<Integer, ScaleBench.Result> rdma,
      PrintStream out) {
    out.println("Scaling, N echo connections (rdma-streams / pekko-tcp; connect time: lower is"
        + " better, the ratio is Tcp's over ours; CPU: both processes' per echo)");
    out.println(String.format("%7s %15s %15s %8s %14s %14s %8s %13s %13s %9s %11s %11s %9s", "N",
        "opened tcp", "opened rdma", "", "conn_us tcp", "conn_us rdma", "x", "msg/s tcp",
        "msg/s rdma", "x", "cpu_us tcp", "cpu_us rdma", "threads"));
    for (int n : union(tcp, rdma)) {
      ScaleBench.Result t = tcp.get(n);
      ScaleBench.Result r = rdma.get(n);
      out.println(String.format("%7d %15s %15s %8s %14s %14s %8s %13s %13s %9s %11s %11s %9s", n,
          t == null ? "-" : t.opened(), r == null ? "-" : r.opened(), "",
          t == null ? "-" : String.format("%.0f", t.connectMicros()),
          r == null ? "-" : String.format("%.0f", r.connectMicros()),
          ratio(t == null ? 0 : t.connectMicros(), r == null ? 0 : r.connectMicros()),
          t == null ? "-" : String.format("%.0f", t.echoRate()),
          r == null ? "-" : String.format("%.0f", r.echoRate()),
          ratio(r == null ? 0 : r.echoRate(), t == null ? 0 : t.echoRate()), cpu(t), cpu(r),
          (t == null ? "-" : t.threads()) + "/" + (r == null ? "-" : r.threads())));
    }
    for (int n : union(tcp, rdma)) {
      for (ScaleBench.Result x : new ScaleBench.Result[] {tcp.get(n), rdma.get(n)}) {
        if (x != null && x.failure() != null) {
          out.println("  " + x.transport() + " at N=" + n + ", after " + x.opened()
              + " connections: " + x.failure());
        }
      }
      ScaleBench.Result r = rdma.get(n);
      if (r != null && r.opened() > 0) {
        out.println("  rdma-streams at N=" + n + ": " + r.registeredPerConnection()
            + " B registered and " + r.directPerConnection() + " B direct per connection, idle"
            + " CPU " + r.idleCpu() + "%");
      }
    }
  }

  /** Both processes' CPU per echo in microseconds, or "-". */
  private static String cpu(ScaleBench.Result r) {
    return r == null || r.cpuPerMessage() <= 0 ? "-" : String.format("%.2f", r.cpuPerMessage());
  }

  /** The message rate against another run, {@code name}, which {@code what} describes. */
  static void printAgainst(String name, String what, Map<Integer, ScaleBench.Result> other,
      Map<Integer, ScaleBench.Result> rdma, PrintStream out) {
    if (other.isEmpty()) return;
    out.println("Against " + name + " (" + what + "): 64-byte echoes/s");
    out.println(String.format("%7s %14s %14s %8s %14s %14s", "N", "msg/s " + name,
        "msg/s rdma", "x", "cpu_us " + name, "cpu_us rdma"));
    for (int n : union(other, rdma)) {
      ScaleBench.Result f = other.get(n);
      ScaleBench.Result r = rdma.get(n);
      out.println(String.format("%7d %14s %14s %8s %14s %14s", n,
          f == null ? "-" : String.format("%.0f", f.echoRate()),
          r == null ? "-" : String.format("%.0f", r.echoRate()),
          ratio(r == null ? 0 : r.echoRate(), f == null ? 0 : f.echoRate()), cpu(f), cpu(r)));
    }
  }

  /**
   * Twice Tcp's echo rate against what the benchmark's client alone achieves (where it is more,
   * no transport can show twice Tcp's rate in this benchmark) and against {@code in-jvm}, Pekko's
   * own passing of elements between actors, a hop per element (a reference, not a ceiling: a
   * transport that crosses once per batch can pass it).
   */
  static void printCeiling(Map<Integer, ScaleBench.Result> tcp,
      Map<Integer, ScaleBench.Result> none, Map<Integer, ScaleBench.Result> inJvm,
      PrintStream out) {
    if (none.isEmpty()) return;
    out.println("Twice Tcp's echo rate against the client alone and against in-jvm (x: their"
        + " rate over twice Tcp's; below 1 for the client alone, twice Tcp's is out of reach of"
        + " any transport here)");
    out.println(String.format("%7s %14s %14s %8s %14s %8s", "N", "2 x tcp", "msg/s none", "x",
        "msg/s in-jvm", "x"));
    for (int n : union(tcp, none)) {
      ScaleBench.Result t = tcp.get(n);
      ScaleBench.Result c = none.get(n);
      ScaleBench.Result j = inJvm.get(n);
      double twice = t == null ? 0 : 2 * t.echoRate();
      out.println(String.format("%7d %14s %14s %8s %14s %8s", n,
          t == null ? "-" : String.format("%.0f", twice),
          c == null ? "-" : String.format("%.0f", c.echoRate()),
          ratio(c == null ? 0 : c.echoRate(), twice),
          j == null ? "-" : String.format("%.0f", j.echoRate()),
          ratio(j == null ? 0 : j.echoRate(), twice)));
    }
  }

  private static List<Integer> union(Map<Integer, ?> a, Map<Integer, ?> b) {
    TreeMap<Integer, Boolean> all = new TreeMap<>();
    a.keySet().forEach(k -> all.put(k, true));
    b.keySet().forEach(k -> all.put(k, true));
    return new ArrayList<>(all.keySet());
  }

  private static String ratio(double over, double under) {
    return over > 0 && under > 0 ? String.format("%.2f", over / under) : "-";
  }

  /** Each run's echo rate against N, a line named by its key, in the keys' order. */
  static void chart(Map<String, Map<Integer, ScaleBench.Result>> runs, Path png)
      throws IOException {
    XYChart chart = new XYChartBuilder().width(1000).height(560)
        .title("N echo connections: echo rate (64-byte messages)")
        .xAxisTitle("connections (N)").yAxisTitle("messages/s").build();
    chart.getStyler().setXAxisLogarithmic(true);
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
    new TreeMap<>(runs).forEach((name, rows) -> add(chart, name, rows));
    if (chart.getSeriesMap().isEmpty()) return;
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static void add(XYChart chart, String name, Map<Integer, ScaleBench.Result> rows) {
    List<Double> x = new ArrayList<>();
    List<Double> y = new ArrayList<>();
    for (ScaleBench.Result r : rows.values()) {
      if (r.failure() != null || r.echoRate() <= 0) continue;
      x.add((double) r.n());
      y.add(r.echoRate());
    }
    if (!x.isEmpty()) chart.addSeries(name, x, y);
  }
}
