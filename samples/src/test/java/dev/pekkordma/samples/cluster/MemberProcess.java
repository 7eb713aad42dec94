package dev.pekkordma.samples.cluster;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A {@link ClusterTransfer} member in a JVM of its own (this JVM's java and class path), with
 * the tests' quick gossip, failure detection and downing. Its stdout lines are read as they
 * come; its stderr (the log) goes to a file under target/.
 */
final class MemberProcess implements AutoCloseable {
  /** The tests' timing, as -D overrides (the sample takes them over its own). */
  private static final List<String> QUICK = List.of(
      "-Dpekko.cluster.gossip-interval=200ms",
      "-Dpekko.cluster.leader-actions-interval=200ms",
      "-Dpekko.cluster.unreachable-nodes-reaper-interval=200ms",
      "-Dpekko.cluster.periodic-tasks-initial-delay=100ms",
      "-Dpekko.cluster.failure-detector.heartbeat-interval=200ms",
      "-Dpekko.cluster.failure-detector.acceptable-heartbeat-pause=1s",
      "-Dpekko.cluster.failure-detector.expected-response-after=500ms",
      "-Dpekko.cluster.distributed-data.gossip-interval=200ms",
      "-Dpekko.cluster.distributed-data.notify-subscribers-interval=100ms",
      "-Dpekko.cluster.typed.receptionist.distributed-data.gossip-interval=200ms",
      "-Dpekko.cluster.typed.receptionist.distributed-data.notify-subscribers-interval=100ms",
      "-Dpekko.cluster.split-brain-resolver.stable-after=3s",
      "-Dpekko.cluster.down-removal-margin=500ms",
      "-Dpekko.cluster.shutdown-after-unsuccessful-join-seed-nodes=30s",
      "-Dpekko.coordinated-shutdown.run-by-jvm-shutdown-hook=off",
      "-Dpekko-rdma.cm.connect-timeout=1s",
      "-Dpekko-rdma.runtime.poller.block-timeout=20ms",
      "-Dpekko-rdma.actors.cm.connect-timeout=2s",
      "-Dpekko-rdma.actors.cm.disconnect-timeout=1s",
      "-Dpekko-rdma.actors.cm.device-idle-timeout=100ms",
      "-Dpekko-rdma.cluster.flush-timeout=1s",
      "-Dpekko-rdma.cluster.connect-wait=10s");

  final String name;
  private final Process process;
  private final PrintWriter stdin;
  private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final List<String> seen = Collections.synchronizedList(new ArrayList<>());
  private final List<String> untaken = new ArrayList<>(); // the test thread's

  private MemberProcess(String name, Process process) {
    this.name = name;
    this.process = process;
    this.stdin = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          seen.add(line);
          lines.add(line);
        }
      } catch (IOException e) {
        // the process went
      }
    }, "stdout of " + name);
    reader.setDaemon(true);
    reader.start();
  }

  static MemberProcess start(String name, String... args) throws IOException {
    return start(List.of(), name, args);
  }

  /** With {@code jvmArgs} after the quick timing (a later -D wins). */
  static MemberProcess start(List<String> jvmArgs, String name, String... args)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-Xmx256m");
    cmd.add("-XX:TieredStopAtLevel=1"); // starts sooner; these runs are short
    cmd.addAll(QUICK);
    cmd.addAll(jvmArgs);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(ClusterTransfer.class.getName());
    cmd.addAll(List.of(args));
    Path logs = Path.of("target", "processes");
    Files.createDirectories(logs);
    Process p = new ProcessBuilder(cmd)
        .redirectError(logs.resolve(name + "-" + System.nanoTime() + ".log").toFile())
        .start();
    return new MemberProcess(name, p);
  }

  /**
   * The first line not taken yet that matches; fails with what the process said. Lines that do
   * not match stay for later awaits: the process may print things in another order than the
   * test looks for them.
   */
  String await(String what, Predicate<String> matches, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int i = 0; i < untaken.size(); i++) {
      if (matches.test(untaken.get(i))) return untaken.remove(i);
    }
    try {
      while (true) {
        long left = deadline - System.nanoTime();
        String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
        if (line == null) {
          throw new AssertionError(name + " did not print " + what + " within " + timeout
              + (process.isAlive() ? "" : " (it exited with " + process.exitValue() + ")")
              + "; its last lines:\n  " + String.join("\n  ", tail(30)));
        }
        if (matches.test(line)) return line;
        untaken.add(line);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  String await(String prefix, Duration timeout) {
    return await("'" + prefix + "'", l -> l.startsWith(prefix), timeout);
  }

  void command(String command) {
    stdin.println(command);
  }

  /** The provider's live resources, as the process prints them. */
  String resources(Duration timeout) {
    command("resources");
    return await("RESOURCES ", timeout).substring("RESOURCES ".length());
  }

  /** Asks for the resources until they read {@code expected}; returns the last reading. */
  String awaitResources(String expected, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String now = resources(timeout);
    while (!now.equals(expected) && System.nanoTime() < deadline) {
      pause(200);
      now = resources(timeout);
    }
    return now;
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** Sends a Unix signal by name (STOP, CONT) with kill(1). */
  void signal(String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, String.valueOf(process.pid()))
        .inheritIO().start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new AssertionError("kill -" + signal + " " + name + " failed");
    }
  }

  /** SIGKILL: no leaving, no goodbye, nothing flushed. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(10, TimeUnit.SECONDS)) throw new AssertionError(name + " did not die");
  }

  /** Waits for the process to exit by itself; its exit code. */
  int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError(name + " did not exit within " + timeout + "; its last lines:\n  "
          + String.join("\n  ", tail(30)));
    }
    return process.exitValue();
  }

  private List<String> tail(int n) {
    synchronized (seen) {
      return new ArrayList<>(seen.subList(Math.max(0, seen.size() - n), seen.size()));
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (!process.isAlive()) return;
    command("quit");
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(5, TimeUnit.SECONDS);
    }
  }
}
