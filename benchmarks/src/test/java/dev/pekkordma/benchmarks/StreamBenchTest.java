package dev.pekkordma.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The stream benchmark runs over both transports and prints lines the report reads (a small
 * run: it checks that the benchmark works, not how fast anything is).
 */
class StreamBenchTest {
  @TempDir Path dir;

  @ParameterizedTest
  @CsvSource({"tcp, 2", "rdma, 2", "tcp, 1", "rdma, 1"})
  void throughputAndLatencyPrintPerftestLines(String transport, String jvms) throws Exception {
    String tp = run("--transport", transport, "--jvms", jvms, "--test", "throughput", "--sizes",
        "4k,64k", "--bytes", "1m", "--warmup-bytes", "256k");
    BenchReport.Series s = twoSizes("tp", tp);
    assertEquals(16, s.rows().get(65536L).iterations(), tp);
    assertTrue(BenchReport.value(s.rows().get(4096L), true) > 0, tp);
    assertShape(tp, jvms);

    String lat = run("--transport", transport, "--jvms", jvms, "--test", "latency", "-n", "50",
        "--warmup", "10");
    assertShape(lat, jvms);
    Files.writeString(dir.resolve("lat.txt"), lat);
    BenchReport.Series l = BenchReport.parse("lat", dir.resolve("lat.txt"));
    assertTrue(!l.bandwidth(), lat);
    assertTrue(BenchReport.value(l.rows().get(64L), false) > 0, lat);
  }

  @ParameterizedTest
  @ValueSource(strings = {"2", "1"})
  void theZeroCopyBulkPairPrintsPerftestLines(String jvms) throws Exception {
    String zc = run("--transport", "rdma", "--jvms", jvms, "--test", "zero-copy", "--sizes",
        "4k,64k", "--bytes", "1m", "--warmup-bytes", "256k");
    assertShape(zc, jvms);
    assertTrue(zc.contains("bulkChunkSink -> bulkBufferSource"), zc);
    BenchReport.Series s = twoSizes("zc", zc);
    assertEquals(256, s.rows().get(4096L).iterations(), zc);
    assertTrue(BenchReport.value(s.rows().get(65536L), true) > 0, zc);
  }

  @Test
  void theZeroCopyTestNeedsTheRdmaTransport() {
    // the parameter exception prints through its own CommandLine, to System.err
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream stderr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      assertEquals(2, new CommandLine(new StreamBench(new PrintStream(new ByteArrayOutputStream())))
          .execute("--transport", "tcp", "--test", "zero-copy"));
    } finally {
      System.setErr(stderr);
    }
    String message = err.toString(StandardCharsets.UTF_8);
    assertTrue(message.contains("--test zero-copy") && message.contains("--transport rdma")
        && message.contains("was 'tcp'"), message);
  }

  /** The banner says where the server ran, and each result has both ends' CPU beside it. */
  private static void assertShape(String output, String jvms) {
    if (jvms.equals("2")) {
      assertTrue(output.contains("the server in a JVM of its own (pid "), output);
      assertTrue(output.matches(
          "(?s).*CPU per message : client \\d+\\.\\d+ us, server \\d+\\.\\d+ us.*"), output);
    } else {
      assertTrue(output.contains("(one JVM: not a deployment's shape)"), output);
      assertTrue(output.contains("us (this JVM, both ends"), output);
    }
    assertTrue(output.contains(" Load            : "), output);
  }

  /** The output read as the report reads it: bandwidth, a line for each of the two sizes. */
  private BenchReport.Series twoSizes(String name, String output) throws IOException {
    Path file = dir.resolve(name + ".txt");
    Files.writeString(file, output);
    BenchReport.Series s = BenchReport.parse(name, file);
    assertTrue(s.bandwidth(), output);
    assertEquals(2, s.rows().size(), output);
    return s;
  }

  private static String run(String... args) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int code = new CommandLine(new StreamBench(new PrintStream(b, true, StandardCharsets.UTF_8)))
        .execute(args);
    String out = b.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, out);
    return out;
  }
}
