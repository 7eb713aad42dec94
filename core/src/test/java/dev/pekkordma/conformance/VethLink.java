package dev.pekkordma.conformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Soft-RoCE VM's veth link between rxe_a (198.51.100.1) and rxe_b (198.51.100.2), and the
 * faults {@code native/softroce/link.sh} puts on it; the script's path is in {@code
 * pekko-rdma.test.link-script}, set only where the link exists, so the tests that use it run
 * only there.
 */
public final class VethLink {
  public static final String SCRIPT_PROPERTY = "pekko-rdma.test.link-script";
  public static final String SERVER = "198.51.100.1";
  public static final String CLIENT = "198.51.100.2";

  private VethLink() {}

  /** Runs {@code link.sh args}, e.g. {@code ("netem", "loss", "1%")}; returns its output. */
  public static String set(String... args) throws IOException, InterruptedException {
    String script = System.getProperty(SCRIPT_PROPERTY);
    if (script == null) throw new IllegalStateException(SCRIPT_PROPERTY + " is not set");
    List<String> cmd = new ArrayList<>(List.of("sh", script));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError(String.join(" ", cmd) + " failed: " + out);
    }
    return out;
  }
}
