package dev.pekkordma.samples.perf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.conformance.VethLink;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * perftest's {@code ib_write_bw} and our {@code rdma-perf write_bw} side by side on the Soft-RoCE
 * VM's veth link between rxe_a and rxe_b, clean and under {@code tc netem} loss (set by {@code
 * native/softroce/link.sh}, whose path is in {@code pekko-rdma.test.link-script}): both must
 * finish every iteration, and their bandwidths are printed with the {@code [faults]} prefix.
 * The kernel tool connects its QPs by hand (GID index 1, local ACK timeout 14: 67 ms), ours
 * through rdma_cm, whose kernel side picks the timeout on RoCE (19 on Debian's 6.1: 2.1 s);
 * under loss rxe often waits for that timer before it retransmits, which the figures show.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.test.link-script", matches = ".+")
@Timeout(900)
class LossyLinkPerfTest {
  private static final String SERVER = VethLink.SERVER;
  private static final String CLIENT = VethLink.CLIENT;
  private static final int SIZE = 65536;
  private static final Pattern BW_LINE =
      Pattern.compile("^\\s*" + SIZE + "\\s+(\\d+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s*$");
  private static int port = 18700;

  @BeforeAll
  @AfterAll
  static void clearLink() throws Exception {
    VethLink.set("clear");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', value = {"none | 200", "loss 1% | 20"})
  void perftestAndOursFinishOnTheSameLink(String fault, int iters) throws Exception {
    if (!fault.equals("none")) VethLink.set(("netem " + fault).split(" "));
    try {
      double theirs = ibWriteBw(iters);
      double ours = rdmaPerfWriteBw(iters);
      log(String.format("write_bw %d B x %d, %s: ib_write_bw %.2f MB/s, rdma-perf %.2f MB/s"
          + " (ours/theirs %.2f)", SIZE, iters, fault.equals("none") ? "clean link" : fault,
          theirs, ours, ours / theirs));
    } finally {
      VethLink.set("clear");
    }
  }

  /**
   * perftest's own pair, each end on its own device: the average MB/s the client printed. Under
   * emulation perftest's own clock calibration may fail ("Correlation coefficient r^2 < 0.9,
   * Can't produce a report"), and on the lossy link its exchange of keys and results over TCP
   * may ("Failed to exchange data between server and clients"): that run is tried again, at
   * most three times in all.
   */
  private static double ibWriteBw(int iters) throws Exception {
    for (int attempt = 1; ; attempt++) {
      int p = port++;
      List<String> common = List.of("-x", "1", "-s", "" + SIZE, "-n", "" + iters, "-p", "" + p);
      Process server = start("ib_write_bw", "-d", "rxe_a", common);
      Thread.sleep(1000);
      Process client = start("ib_write_bw", "-d", "rxe_b", common, SERVER);
      String clientOut = finish(client, "ib_write_bw client", attempt < 3);
      String serverOut = finish(server, "ib_write_bw server", attempt < 3);
      if (clientOut != null && serverOut != null) return average(clientOut, "ib_write_bw", iters);
    }
  }

  /** Ours, both ends in this JVM through rdma_cm across the link. */
  private static double rdmaPerfWriteBw(int iters) throws Exception {
    int p = port++;
    ByteArrayOutputStream serverOut = new ByteArrayOutputStream();
    CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> RdmaPerf.execute(
        new String[] {"server", "--bind", SERVER + ":" + p, "--provider", "native",
            "--timeout", "300"},
        new PrintStream(serverOut, true, StandardCharsets.UTF_8), System.err));
    ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
    int rc = -1;
    for (int attempt = 0; attempt < 20 && rc != 0; attempt++) {
      // until the server listens, a connect is rejected
      Thread.sleep(1000);
      clientOut.reset();
      rc = RdmaPerf.execute(new String[] {"client", "--connect", SERVER + ":" + p, "--source",
          CLIENT, "--provider", "native", "--timeout", "300", "write_bw", "-s", "" + SIZE,
          "-n", "" + iters, "--warmup", "10"}, new PrintStream(clientOut, true, StandardCharsets.UTF_8),
          System.err);
      if (rc != 0 && !clientOut.toString(StandardCharsets.UTF_8).contains("REJECTED")) break;
    }
    String out = clientOut.toString(StandardCharsets.UTF_8);
    out.lines().forEach(l -> log("rdma-perf client| " + l));
    assertEquals(0, rc, "rdma-perf client: " + out);
    assertEquals(0, server.get(300, TimeUnit.SECONDS),
        "rdma-perf server: " + serverOut.toString(StandardCharsets.UTF_8));
    return average(out, "rdma-perf", iters);
  }

  private static double average(String out, String who, int iters) {
    for (String l : out.split("\n")) {
      Matcher m = BW_LINE.matcher(l);
      if (m.matches()) {
        assertEquals(iters, Integer.parseInt(m.group(1)), who + ": iterations in " + l);
        return Double.parseDouble(m.group(3));
      }
    }
    throw new AssertionError(who + " printed no result line for " + SIZE + " bytes: " + out);
  }

  private static Process start(String tool, String dashD, String device, List<String> args,
      String... more) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(tool, dashD, device));
    cmd.addAll(args);
    cmd.addAll(List.of(more));
    log("$ " + String.join(" ", cmd));
    return new ProcessBuilder(cmd).redirectErrorStream(true).start();
  }

  private static String finish(Process p, String who) throws Exception {
    return finish(p, who, false);
  }

  /**
   * The output of {@code p}, once it has exited 0; null instead when {@code mayRetry} and it
   * failed only in perftest's clock calibration.
   */
  private static String finish(Process p, String who, boolean mayRetry) throws Exception {
    CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> {
      try {
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "(output lost: " + e + ")";
      }
    });
    if (!p.waitFor(300, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(who + " did not finish within 300 s");
    }
    String text = out.get(10, TimeUnit.SECONDS);
    text.lines().forEach(l -> log(who + "| " + l));
    if (mayRetry && p.exitValue() != 0 && (text.contains("Can't produce a report")
        || text.contains("Failed to exchange data between server and clients"))) {
      return null;
    }
    assertEquals(0, p.exitValue(), who + "'s exit status");
    return text;
  }

  private static void log(String line) {
    System.out.println("[faults] " + line);
    System.out.flush();
  }
}
