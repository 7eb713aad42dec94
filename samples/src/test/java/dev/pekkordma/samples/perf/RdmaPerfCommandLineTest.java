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
      "-D 1 -n 10                            | -D/--duration and -n/--iters exclude each other",
      "-n 10 -D 1                            | -D/--duration and -n/--iters exclude each other",
      "send_lat -D 1                         | -D/--duration: send_lat is a latency test",
      "-D 0                                  | -D/--duration must be in [1, 65535]",
      "-D 2 -f 1                             | -f/--margin 1: -D/--duration 2 must be more than twice",
      "-f 1                                  | -f/--margin goes with -D/--duration",
      "-D 1 --warmup 5                       | -D/--duration and --warmup exclude each other",
      "-q 0                                  | -q/--qp must be in [1, 16384]",
      "send_lat -q 2                         | -q/--qp 2: send_lat is a latency test",
      "-q 16 -n 1000000                      | -n/--iters 1000000 on -q/--qp 16 QPs",
      "write_lat -b                          | -b/--bidirectional: write_lat is a latency test",
      "read_bw -c UC                         | -c/--connection UC: read_bw needs RDMA_READ",
      "read_lat -c UC                        | -c/--connection UC: read_lat needs RDMA_READ",
      "write_bw -c UD                        | -c/--connection UD: write_bw needs RDMA_WRITE",
      "read_bw -c UD                         | -c/--connection UD: read_bw needs RDMA_READ",
      "-c XY                                 | --connection",
      "send_bw -c UD -s 8k --provider soft -n 10 | -s/--size 8192 bytes is more than a UD message can carry: at most the path MTU, 4096 bytes",
      "client --connect 127.0.0.1:18515 send_bw -c UD | -c/--connection UD: rdma_cm connects RC QPs",
      "client --connect 127.0.0.1:18515 write_bw -c UC | -c/--connection UC: rdma_cm connects RC QPs",
  })
  void rejected(String args, String expected) {
    assertEquals(2, run(args.trim().split("\\s+")), err);
    assertTrue(err.contains(expected), "expected '" + expected + "' in: " + err);
  }

  /** A name that does not resolve is a failure at run time (DNS may answer later), not bad input. */
  @Test
  void anUnknownSourceHostFailsAtRunTime() {
    assertEquals(1, run("client", "--source", "no.such.host.invalid"), err);
    assertTrue(err.contains("--source: unknown host 'no.such.host.invalid'"), err);
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
    for (String o : new String[] {"-D, --duration", "-f, --margin", "-q, --qp", "-b, --bidirectional",
        "-c, --connection"}) {
      assertTrue(out.contains(o), o + " in: " + out);
    }
    assertTrue(out.replaceAll("\\s+", " ").contains("Not for latency tests"), out);
  }

  /** perftest's -q, -b, -c and -D: the banner says so, the lines and the JSON count it. */
  @Test
  void perftestsQpConnectionDirectionAndDuration() throws Exception {
    java.nio.file.Path json = java.nio.file.Files.createTempFile("rdma-perf", ".json");
    try {
      assertEquals(0, run("send_bw", "--provider", "soft", "-q", "4", "-b", "-c", "UC", "-s",
          "1k", "-n", "100", "--warmup", "10", "-v", "--out_json", json.toString()), err);
      assertTrue(out.contains("Send Bidirectional BW Test"), out);
      assertTrue(out.contains(" Number of qps   : 4\t\tTransport type : IB"), out);
      assertTrue(out.contains(" Connection type : UC\t\tUsing SRQ      : OFF"), out);
      assertTrue(out.contains("Iterations      : 100 per size and QP"), out);
      assertTrue(out.matches("(?s).*\\n 1024 +400 +[0-9.]+ +[0-9.]+\\s+[0-9.]+\\n.*"), out);
      assertTrue(out.contains("resources    all closed"), out);
      String j = java.nio.file.Files.readString(json);
      assertTrue(j.contains("\"qps\": 4,") && j.contains("\"connection\": \"UC\",")
          && j.contains("\"bidirectional\": true,") && j.contains("\"duration\": 0,")
          && j.contains("{\"bytes\": 1024, \"iterations\": 400, "), j);

      long start = System.nanoTime();
      assertEquals(0, run("write_bw", "--provider", "soft", "-D", "1", "-s", "4k", "--out_json",
          json.toString()), err);
      assertTrue(System.nanoTime() - start >= 1_000_000_000L);
      assertTrue(out.contains(" Duration        : 1[sec] per size"), out);
      assertTrue(out.contains("WARNING: BW peak won't be measured in this run."), out);
      j = java.nio.file.Files.readString(json);
      assertTrue(j.contains("\"duration\": 1,") && j.contains("\"margin\": 0,")
          && j.contains("\"qps\": 1,") && j.contains("\"connection\": \"RC\",")
          && j.contains("\"bidirectional\": false,") && j.contains("\"BW_peak\": 0.00,"), j);

      assertEquals(0, run("send_bw", "--provider", "soft", "-c", "ud", "-s", "4k", "-n", "200",
          "--warmup", "10"), err);
      assertTrue(out.contains(" Connection type : UD"), out);
      assertTrue(out.contains(" RX depth        : 200"), out); // perftest's for UD: the iterations
      assertEquals(0, run("send_lat", "--provider", "soft", "-c", "UD", "-n", "100", "--warmup",
          "10"), err);
      assertTrue(out.contains("Max inline data : 188[B]"), out); // perftest's for UD
    } finally {
      java.nio.file.Files.deleteIfExists(json);
    }
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
