package dev.pekkordma.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * The scaling benchmark over each transport and reference, small: every connection opens and
 * echoes all it sent, and the report reads the lines (how fast is not checked here).
 */
class ScaleBenchTest {
  @TempDir Path dir;

  @ParameterizedTest
  @CsvSource({"rdma, 2", "tcp, 2", "tcp-framed, 2", "rdma, 1", "in-jvm, 1", "none, 1"})
  void everyConnectionEchoesWhatItSent(String transport, String jvms) throws Exception {
    Path tsv = dir.resolve(transport + ".tsv");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code = new CommandLine(new ScaleBench(new PrintStream(out, true, StandardCharsets.UTF_8)))
        .execute("--transport", transport, "--jvms", jvms, "-N", "1,4", "--concurrency", "4",
            "--messages", "4000", "--warmup-messages", "0", "--warmup-connections", "3",
            "--idle-seconds", "1", "--tsv", tsv.toString());
    String printed = out.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, printed);
    List<String> lines = Files.readAllLines(tsv);
    assertEquals(2, lines.size(), printed);
    for (String line : lines) {
      ScaleBench.Result r = ScaleBench.Result.parse(line);
      assertEquals(r.n(), r.opened(), line);
      assertNull(r.failure(), line);
      assertTrue(r.echoRate() > 0, line);
      // the process's CPU clock ticks in 10 ms on Linux: a run this small may show none
      assertTrue(r.cpuPerMessage() >= 0, line);
    }
    assertTrue(printed.contains(jvms.equals("2") ? "the server in a JVM of its own (pid "
        : "(one JVM: not a deployment's shape)"), printed);
  }

  @Test
  void aReferenceWithoutATransportHasNoServerForAnotherJvm() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream stderr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      assertEquals(2, new CommandLine(new ScaleBench(new PrintStream(new ByteArrayOutputStream())))
          .execute("--transport", "in-jvm"));
    } finally {
      System.setErr(stderr);
    }
    String message = err.toString(StandardCharsets.UTF_8);
    assertTrue(message.contains("--transport in-jvm") && message.contains("--jvms 1"), message);
  }

  @Test
  void pausesBetweenConnectsAreNotCountedAsConnectTime() throws Exception {
    Path tsv = dir.resolve("paused.tsv");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code = new CommandLine(new ScaleBench(new PrintStream(out, true, StandardCharsets.UTF_8)))
        .execute("--transport", "none", "--jvms", "1", "-N", "4", "--concurrency", "1", "--connect-pause",
            "300", "--messages", "4", "--warmup-messages", "0", "--warmup-connections", "0",
            "--idle-seconds", "1", "--tsv", tsv.toString());
    String printed = out.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, printed);
    ScaleBench.Result r = ScaleBench.Result.parse(Files.readAllLines(tsv).get(0));
    assertEquals(4, r.opened(), printed);
    // four pauses of 300 ms over four connections would be 300,000 us each
    assertTrue(r.connectMicros() < 150_000, printed);
  }

  @Test
  void theCeilingSaysWhereTwiceTcpIsOutOfReach() {
    Map<Integer, ScaleBench.Result> tcp = new TreeMap<>();
    Map<Integer, ScaleBench.Result> none = new TreeMap<>();
    tcp.put(1, result("pekko-tcp", 1, 1_000_000));
    none.put(1, result("none", 1, 4_000_000));
    tcp.put(100, result("pekko-tcp", 100, 2_500_000));
    none.put(100, result("none", 100, 4_000_000));
    Map<Integer, ScaleBench.Result> inJvm = new TreeMap<>();
    inJvm.put(1, result("in-jvm", 1, 1_500_000));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ScaleReport.printCeiling(tcp, none, inJvm,
        new PrintStream(out, true, StandardCharsets.UTF_8));
    String printed = out.toString(StandardCharsets.UTF_8);
    assertTrue(printed.matches(
        "(?s).*\\n\\s+1\\s+2000000\\s+4000000\\s+2\\.00\\s+1500000\\s+0\\.75\\n.*"), printed);
    assertTrue(printed.matches("(?s).*\\n\\s+100\\s+5000000\\s+4000000\\s+0\\.80\\s+-\\s+-\\n.*"),
        printed);
  }

  private static ScaleBench.Result result(String transport, int n, double rate) {
    return new ScaleBench.Result(transport, n, n, 1000, 2000, 0, 0, 20, 1, rate, 3.0, null);
  }
}
