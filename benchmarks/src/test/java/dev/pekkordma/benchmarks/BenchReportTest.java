package dev.pekkordma.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The report reads perftest's layout, compares with ratios and targets, and draws the chart. */
class BenchReportTest {
  @TempDir Path dir;

  private static final String BW = String.join("\n",
      "---------------------------------------------------------------------------------------",
      "                    RDMA_Write BW Test",
      " Max inline data : 0[B]",
      "---------------------------------------------------------------------------------------",
      " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
      " 4096       5000             120.50             100.25\t\t     0.025664",
      " 65536      1000             60.00              50.00\t\t     0.000800",
      "---------------------------------------------------------------------------------------",
      "");

  private static final String BW2 = BW.replace("100.25", "400.00").replace("60.00              50.00",
      "260.00             200.00");

  private static final String LAT = String.join("\n",
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
          + "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ",
      " 64      1000          20.00          90.00        23.00  \t       24.00     \t2.00"
          + "\t\t30.00 \t\t80.00",
      "");

  @Test
  void comparesAndDraws() throws Exception {
    Files.writeString(dir.resolve("perftest.txt"), BW);
    Files.writeString(dir.resolve("ours.txt"), BW2);
    Files.writeString(dir.resolve("lat-a.txt"), LAT);
    Files.writeString(dir.resolve("lat-b.txt"), LAT.replace("23.00", "46.00"));
    Files.writeString(dir.resolve("manifest.tsv"), String.join("\n",
        "series\tperftest\tperftest.txt",
        "series\tours\tours.txt",
        "series\tmissing\tnot-there.txt",
        "series\tlat-a\tlat-a.txt",
        "series\tlat-b\tlat-b.txt",
        "compare\tS\tours\tperftest\tbw\t0.9\t65536",
        "compare\tS\tlat-b\tlat-a\tlat\t1.5\t64",
        "compare\tS\tmissing\tperftest\tbw\t-\t-",
        "note\tT\ta gap",
        ""));
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    assertEquals(0, BenchReport.report(dir, new PrintStream(b, true, StandardCharsets.UTF_8)));
    String out = b.toString(StandardCharsets.UTF_8);
    assertTrue(out.contains("== S"), out);
    assertTrue(out.matches("(?s).*65536\\s+1000\\s+200\\.00\\s+50\\.00\\s+4\\.00\\s+>= 0\\.90: met.*"), out);
    assertTrue(out.matches("(?s).*64\\s+1000\\s+46\\.00\\s+23\\.00\\s+2\\.00\\s+<= 1\\.50: NOT met.*"), out);
    assertTrue(out.contains("no figures for missing"), out);
    assertTrue(out.contains("a gap"), out);
    assertTrue(Files.size(dir.resolve("throughput.png")) > 1000);
  }

  /** One rdma-perf --out_json file, as it writes them. */
  private static String json(String unit, String results) {
    return "{\n  \"test\": \"write_bw\",\n  \"provider\": \"soft\",\n  \"qps\": 1,\n"
        + "  \"connection\": \"RC\",\n  \"bidirectional\": false,\n  \"duration\": 0,\n"
        + "  \"margin\": 0,\n  \"unit\": \"" + unit + "\",\n  \"results\": [\n" + results
        + "\n  ]\n}\n";
  }

  private static String bw(long bytes, long iters, double peak, double avg, double rate) {
    return String.format(java.util.Locale.ROOT, "    {\"bytes\": %d, \"iterations\": %d,"
        + " \"BW_peak\": %.2f, \"BW_average\": %.2f, \"MsgRate\": %.6f}", bytes, iters, peak,
        avg, rate);
  }

  @Test
  void readsRdmaPerfsJsonRunsInTheirOrder() throws Exception {
    Path ours = Files.createDirectories(dir.resolve("json/ours"));
    Files.writeString(ours.resolve("0001.json"), json("MB/sec",
        bw(4096, 5000, 120.0, 80.0, 0.02) + ",\n" + bw(65536, 1000, 300.0, 200.0, 0.003)));
    Files.writeString(ours.resolve("0002.json"), json("MB/sec", bw(4096, 5000, 200.0, 150.0,
        0.04)));
    // --report_gbits: read back in MB/s (0.8388608 Gb/s is 100 MiB/s)
    Files.writeString(ours.resolve("0003.json"), json("Gb/sec", bw(4096, 5000, 1.0, 0.8388608,
        0.03)));
    Files.writeString(ours.resolve("notes.txt"), "not a run");
    BenchReport.Series s = BenchReport.parse("ours", ours);
    assertNotNull(s);
    assertTrue(s.bandwidth());
    BenchReport.Row r = s.rows().get(4096L);
    assertEquals(150.0, BenchReport.value(r, true), 1e-9);
    assertEquals(3, r.runs());
    assertEquals(100.0, r.eachRun()[2], 0.2); // 0.84 Gb/s as written, to two places
    assertEquals(80.0, r.eachRun()[0], 1e-9);
    assertEquals(1, s.rows().get(65536L).runs());

    Path lat = Files.createDirectories(dir.resolve("json/lat"));
    Files.writeString(lat.resolve("0001.json"), json("usec", "    {\"bytes\": 64, \"iterations\":"
        + " 1000, \"t_min\": 20.00, \"t_max\": 90.00, \"t_typical\": 23.00, \"t_avg\": 24.00,"
        + " \"t_stdev\": 2.00, \"percentile_99\": 30.00, \"percentile_99_9\": 80.00}"));
    Files.writeString(dir.resolve("lat-text.txt"), LAT.replace("23.00", "46.00"));
    // against perftest's text, as bench/run.sh's manifest pairs them
    Files.writeString(dir.resolve("perftest.txt"), BW + BW + BW);
    Files.writeString(dir.resolve("manifest.tsv"), String.join("\n",
        "series\tours\tjson/ours", "series\tperftest\tperftest.txt",
        "series\tlat\tjson/lat", "series\tlat-text\tlat-text.txt",
        "compare\tS\tours\tperftest\tbw\t0.9\t4096",
        "compare\tS\tlat-text\tlat\tlat\t1.5\t64", ""));
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    assertEquals(0, BenchReport.report(dir, new PrintStream(o, true, StandardCharsets.UTF_8)));
    String out = o.toString(StandardCharsets.UTF_8);
    assertTrue(out.matches("(?s).*4096\\s+5000\\s+150\\.00\\s+100\\.25\\s+1\\.50\\s+>= 0\\.90: met\n"
        + "\\s+round by round: 0\\.80 1\\.50 1\\.00; median 1\\.00\n.*"), out);
    assertTrue(out.matches("(?s).*64\\s+1000\\s+46\\.00\\s+23\\.00\\s+2\\.00\\s+<= 1\\.50: NOT met.*"), out);
  }

  @Test
  void parsesResultLinesOnly() throws Exception {
    Path f = dir.resolve("x.txt");
    Files.writeString(f, "warning: something\n" + BW + "1 2 3\n");
    BenchReport.Series s = BenchReport.parse("x", f);
    assertNotNull(s);
    assertTrue(s.bandwidth());
    assertEquals(2, s.rows().size());
    assertEquals(100.25, BenchReport.value(s.rows().get(4096L), true), 1e-9);
  }

  @Test
  void repeatedRunsKeepTheBest() throws Exception {
    Path f = dir.resolve("r.txt");
    Files.writeString(f, BW + BW.replace("100.25", "150.00") + BW.replace("100.25", "90.00"));
    BenchReport.Series s = BenchReport.parse("r", f);
    assertEquals(150.0, BenchReport.value(s.rows().get(4096L), true), 1e-9);
    assertEquals(3, s.rows().get(4096L).runs());
    Path l = dir.resolve("l.txt");
    Files.writeString(l, LAT + LAT.replace("23.00", "21.00") + LAT.replace("23.00", "29.00"));
    assertEquals(21.0, BenchReport.value(BenchReport.parse("l", l).rows().get(64L), false), 1e-9);
  }

  @Test
  void pairsRoundsWhenBothSidesRanAsOften() throws Exception {
    // three rounds: the bests (150 vs 200) come from different rounds; each round's pair shares
    // its round's load
    Files.writeString(dir.resolve("a.txt"), BW.replace("100.25", "80.00")
        + BW.replace("100.25", "150.00") + BW.replace("100.25", "90.00"));
    Files.writeString(dir.resolve("b.txt"), BW.replace("100.25", "200.00")
        + BW.replace("100.25", "160.00") + BW.replace("100.25", "100.00"));
    Files.writeString(dir.resolve("c.txt"), BW + BW);
    Files.writeString(dir.resolve("manifest.tsv"), String.join("\n",
        "series\ta\ta.txt", "series\tb\tb.txt", "series\tc\tc.txt",
        "compare\tS\ta\tb\tbw\t0.9\t4096",
        "compare\tS\tc\tb\tbw\t0.9\t4096", ""));
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    BenchReport.report(dir, new PrintStream(o, true, StandardCharsets.UTF_8));
    String out = o.toString(StandardCharsets.UTF_8);
    assertTrue(out.matches("(?s).*4096\\s+5000\\s+150\\.00\\s+200\\.00\\s+0\\.75\\s+>= 0\\.90: NOT met\n"
        + "\\s+round by round: 0\\.40 0\\.94 0\\.90; median 0\\.90\n.*"), out);
    // two runs against three: not paired, so no round-by-round line for c
    String c = out.substring(out.indexOf(" c "));
    assertTrue(!c.contains("round by round"), out);
  }

  @Test
  void readsBothEndsCpuPerMessageAndComparesIt() throws Exception {
    // a CPU line belongs to the result line above it; two processes add up, one JVM stands alone
    String two = BW.replace("0.025664\n", "0.025664\n CPU per message : client 3.00 us, server 2.00 us\n");
    String two2 = BW.replace("0.025664\n", "0.025664\n CPU per message : client 4.00 us, server 3.00 us\n");
    String one = BW.replace("0.025664\n", "0.025664\n CPU per message : 10.00 us (this JVM, both ends)\n");
    Files.writeString(dir.resolve("a.txt"), two + two2 + two);
    Files.writeString(dir.resolve("b.txt"), one);
    BenchReport.Series a = BenchReport.parse("a", dir.resolve("a.txt"));
    assertEquals(5.0, a.rows().get(4096L).cpu(), 1e-9); // the median of 5, 7, 5
    assertTrue(Double.isNaN(a.rows().get(65536L).cpu()));
    Files.writeString(dir.resolve("manifest.tsv"), String.join("\n",
        "series\ta\ta.txt", "series\tb\tb.txt", "compare\tS\ta\tb\tbw\t-\t4096", ""));
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    BenchReport.report(dir, new PrintStream(o, true, StandardCharsets.UTF_8));
    String out = o.toString(StandardCharsets.UTF_8);
    assertTrue(out.contains("CPU per message, both ends (median of runs): 5.00 us against 10.00 us,"
        + " ratio 0.50"), out);
  }
}
