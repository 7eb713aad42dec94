package dev.pekkordma.samples.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Bad input is refused with exit code 2 and a message naming the option; a good run prints perftest's layout. */
class RdmaPerfCommandLineTest {
  private String out;
  private String err;

  private int run(String... args) {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    int code = RdmaPerf.execute(args, new PrintStream(o, true, StandardCharsets.UTF_8),
        new PrintStream(e, true, StandardCharsets.UTF_8));
    out = o.toString(StandardCharsets.UTF_8);
    err = e.toString(StandardCharsets.UTF_8);
    return code;
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(delimiter = '|', value = {
      "-s 0                                  | --size",
      "-s 12q                                | --size",
      "write_bw -s 2g                        | -s/--size 2 GiB is too large",
      "write_lat -s 1g                       | -s/--size 1 GiB is too large",
      "--sizes 4k,2g                         | --sizes",
      "-a -s 4k                              | -a/--all, -s/--size and --sizes exclude each other",
      "-n 0                                  | -n/--iters",
      "send_lat -n 3                         | -n/--iters",
      "-n 20000000                           | -n/--iters",
      "--warmup -5                           | --warmup",
      "-t 0                                  | -t/--tx-depth",
      "-t 100000                             | -t/--tx-depth",
      "-r 0                                  | -r/--rx-depth",
      "-t 64 -Q 100                          | -Q/--cq-mod",
      "-Q 0                                  | -Q/--cq-mod",
      "-I -1                                 | -I/--inline-size",
      "--timeout 0                           | --timeout",
      "--provider rxe                        | --provider must be auto, soft or native",
      "write_pingpong                        | TEST",
      "-i 0 --provider soft                  | -i/--ib-port",
      "-x -1 --provider soft                 | -x/--gid-index",
      "-x 7 --provider soft -n 10            | --gid-index 7",
      "-d nosuch --provider soft -n 10       | --ib-dev: no device named 'nosuch'",
      "client --connect localhost            | --connect",
      "client --sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23 | --sizes: 23 sizes need",
      "server --accept-timeout 0             | --accept-timeout",
      "client --source no.such.host.invalid  | --source",
  })
  void rejected(String args, String expected) {
    assertEquals(2, run(args.trim().split("\\s+")), err);
    assertTrue(err.contains(expected), "expected '" + expected + "' in: " + err);
  }

  @Test
  void bandwidthRunPrintsPerftestLayout() {
    assertEquals(0, run("write_bw", "--provider", "soft", "--sizes", "2,4k", "-n", "50",
        "--warmup", "5", "-v"), err);
    String[] lines = out.split("\n");
    int header = -1;
    for (int i = 0; i < lines.length; i++) {
      if (lines[i].equals(BwResult.HEADER)) header = i;
    }
    assertTrue(header > 0, out);
    String[] first = lines[header + 1].trim().split("\\s+");
    String[] second = lines[header + 2].trim().split("\\s+");
    assertEquals(5, first.length, lines[header + 1]);
    assertEquals("2", first[0]);
    assertEquals("50", first[1]);
    assertEquals("4096", second[0]);
    assertTrue(lines[header + 3].startsWith("-----"), out);
    assertTrue(out.contains("RDMA_Write BW Test"), out);
    assertTrue(out.contains("resources    all closed"), out);
  }

  @Test
  void latencyRunPrintsPerftestLayout() {
    assertEquals(0, run("send_lat", "--provider", "soft", "-s", "64", "-n", "100",
        "--warmup", "10"), err);
    String[] lines = out.split("\n");
    int header = -1;
    for (int i = 0; i < lines.length; i++) {
      if (lines[i].equals(LatResult.HEADER)) header = i;
    }
    assertTrue(header > 0, out);
    String[] cols = lines[header + 1].trim().split("\\s+");
    assertEquals(9, cols.length, lines[header + 1]);
    assertEquals("64", cols[0]);
    assertEquals("100", cols[1]);
  }

  @Test
  void help() {
    assertEquals(0, run("--help"));
    assertTrue(out.contains("send_bw, write_bw, read_bw"), out);
    assertTrue(out.contains("--tx-depth") && out.contains("--gid-index"), out);
  }
  /** perftest's --report_gbits, --out_json, read_bw's outstanding reads, latency's inline. */
  @Test
  void perftestsReportingOptions() throws Exception {
    java.nio.file.Path json = java.nio.file.Files.createTempFile("rdma-perf", ".json");
    try {
      assertEquals(0, run("read_bw", "--provider", "soft", "-s", "4k", "-n", "200", "--warmup",
          "100", "--report_gbits", "--out_json", json.toString()), err);
      assertTrue(out.contains("Outstand reads  : 16"), out);
      assertTrue(out.contains("BW peak[Gb/sec]    BW average[Gb/sec]"), out);
      String j = java.nio.file.Files.readString(json);
      assertTrue(j.contains("\"test\": \"read_bw\"") && j.contains("\"unit\": \"Gb/sec\"")
          && j.contains("{\"bytes\": 4096, \"iterations\": 200, \"BW_peak\": "), j);
      assertEquals(0, run("send_lat", "--provider", "soft", "-n", "100", "--warmup", "100",
          "--out_json", json.toString()), err);
      assertTrue(out.contains("Max inline data : 236[B]"), out);
      assertTrue(java.nio.file.Files.readString(json).contains("\"t_typical\": "), json.toString());
      assertEquals(0, run("write_lat", "--provider", "soft", "-n", "100", "--warmup", "100"), err);
      assertTrue(out.contains("Max inline data : 220[B]"), out);
      assertEquals(0, run("write_bw", "--provider", "soft", "-s", "4k", "-n", "100"), err);
      assertTrue(out.contains("Max inline data : 0[B]"), out);
    } finally {
      java.nio.file.Files.deleteIfExists(json);
    }
  }
}
