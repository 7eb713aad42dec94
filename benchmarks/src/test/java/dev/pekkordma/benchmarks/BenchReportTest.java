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
}
