package dev.pekkordma.testing;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The Soft-RoCE links of the tests that remove a real device in the VM ({@code rdma link delete}
 * and {@code add}). The kernel's delete waits until every context of the device is closed, so
 * its finishing is what those tests check.
 */
public final class RxeLink {
  private RxeLink() {}

  /** Starts {@code rdma link delete device}: it finishes once nothing holds the device. */
  public static Process delete(String device) throws IOException {
    return run("rdma", "link", "delete", device);
  }

  /** Adds {@code device} on {@code netdev} again; fails naming rdma's output if it did not. */
  public static void add(String device, String netdev, Duration wait)
      throws IOException, InterruptedException {
    Process add = run("rdma", "link", "add", device, "type", "rxe", "netdev", netdev);
    if (!add.waitFor(wait.toSeconds(), TimeUnit.SECONDS) || add.exitValue() != 0) {
      throw new IllegalStateException("rdma link add " + device + " failed: " + output(add));
    }
  }

  /** Whatever happened, the device is there again for what runs after. */
  public static void restore(String device, String netdev, Duration wait)
      throws IOException, InterruptedException {
    Process show = run("rdma", "link", "show", device + "/1");
    if (show.waitFor(wait.toSeconds(), TimeUnit.SECONDS) && show.exitValue() == 0) return;
    run("rdma", "link", "add", device, "type", "rxe", "netdev", netdev)
        .waitFor(wait.toSeconds(), TimeUnit.SECONDS);
  }

  /** What a finished command printed (stdout and stderr). */
  public static String output(Process p) throws IOException {
    return new String(p.getInputStream().readAllBytes());
  }

  private static Process run(String... command) throws IOException {
    return new ProcessBuilder(command).redirectErrorStream(true).start();
  }
}
