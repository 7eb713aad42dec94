package dev.pekkordma.conformance;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM running a peer main of this package with the same class path and the same
 * {@code pekko-rdma.*} system properties (so the same provider). Its output is collected line by
 * line; closing destroys it if it is still running, never waiting long.
 */
public final class PeerProcess implements AutoCloseable {
  private static final String EOF = "\u0000EOF";
  private final Process process;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final StringBuffer output = new StringBuffer();
  private final String name;

  private PeerProcess(Process process, String name) {
    this.process = process;
    this.name = name;
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          output.append(line).append('\n');
          lines.add(line);
        }
      } catch (IOException ignored) {
        // the process went away
      } finally {
        lines.add(EOF);
      }
    }, name + "-output");
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * How long a peer may take to say it is ready: in the Soft-RoCE VM it shares its vCPU with the
   * test's JVM and loads the native provider, which took up to two minutes of emulation on a
   * loaded machine. Only a failing wait lasts this long.
   */
  public static final Duration START = Duration.ofMinutes(5);

  /** Tests' JVM options: small, and quick to start (the C1 compiler only). */
  public static final List<String> TEST_JVM =
      List.of("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1");

  public static PeerProcess start(Class<?> main, String... args) throws IOException {
    return start(TEST_JVM, main, args);
  }

  /**
   * With {@code jvmOptions} instead of {@link #TEST_JVM}: benchmarks want the full JIT (C1
   * alone does without the JDK's crypto and copy intrinsics).
   */
  public static PeerProcess start(List<String> jvmOptions, Class<?> main, String... args)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.addAll(jvmOptions);
    ConformanceProvider.providerName(); // makes sure the provider property is set
    for (String key : System.getProperties().stringPropertyNames()) {
      if (key.startsWith("pekko-rdma.")) cmd.add("-D" + key + "=" + System.getProperty(key));
    }
    cmd.add(main.getName());
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    return new PeerProcess(pb.start(), main.getSimpleName());
  }

  /** Writes {@code line} to the peer's stdin. */
  public void send(String line) {
    try {
      process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
      process.getOutputStream().flush();
    } catch (IOException e) {
      throw new AssertionError(name + " does not read its input any more (exit " + exitCode()
          + "); its output:\n" + output, e);
    }
  }

  public long pid() {
    return process.pid();
  }

  /** Sends a Unix signal by name (STOP, CONT) with kill(1). */
  public void signal(String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid()))
          .inheritIO().start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new AssertionError("kill -" + name + " " + process.pid() + " failed");
      }
      // kill returns once the signal is sent; a busy machine may run the process a little
      // longer, answering what a test sends right after: wait until it is stopped
      if (name.equals("STOP")) awaitState('T');
    } catch (IOException e) {
      throw new AssertionError("cannot run kill", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /** Waits (up to 10 s) until /proc says every thread of the process is in {@code state}. */
  private void awaitState(char state) throws IOException, InterruptedException {
    java.nio.file.Path tasks = java.nio.file.Path.of("/proc", String.valueOf(process.pid()),
        "task");
    if (!java.nio.file.Files.isDirectory(tasks)) return; // not Linux
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      boolean all = true;
      try (var threads = java.nio.file.Files.list(tasks)) {
        for (java.nio.file.Path t : (Iterable<java.nio.file.Path>) threads::iterator) {
          try {
            String s = java.nio.file.Files.readString(t.resolve("stat"));
            // "tid (comm) S ...": the state follows the last ')'
            all &= s.charAt(s.lastIndexOf(')') + 2) == state;
          } catch (java.nio.file.NoSuchFileException gone) {
            // a thread that ended meanwhile
          }
        }
      }
      if (all) return;
      Thread.sleep(1);
    }
    throw new AssertionError(name + " (pid " + process.pid() + ") not in state " + state
        + " within 10 s");
  }

  /** kill -9: the process ends without running anything of its own. */
  public void killHard() {
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The rest of the next line starting with {@code prefix}; fails with the peer's output. */
  public String awaitLine(String prefix, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      String line;
      try {
        line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
      if (line == null) {
        dumpThreads();
        throw new AssertionError(name + " printed no line starting with '" + prefix + "' within "
            + timeout.toMillis() + " ms; its output, its threads last:\n" + output);
      }
      if (line.equals(EOF)) {
        lines.add(EOF);
        throw new AssertionError(name + " ended (exit " + exitCode() + ") without printing '"
            + prefix + "'; its output:\n" + output);
      }
      if (line.startsWith(prefix)) return line.substring(prefix.length()).trim();
    }
  }

  /**
   * Has the JVM print its threads (SIGQUIT: it prints them to its output and runs on), so that a
   * peer that does not answer says where it is; waits a few seconds for the dump to arrive.
   */
  private void dumpThreads() {
    if (!process.isAlive()) return;
    try {
      new ProcessBuilder("kill", "-QUIT", String.valueOf(process.pid())).inheritIO().start()
          .waitFor(10, TimeUnit.SECONDS);
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (System.nanoTime() < until && output.indexOf("JNI global refs") < 0) Thread.sleep(50);
    } catch (IOException e) {
      output.append("(no thread dump: ").append(e).append(")\n");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Waits for the exit and returns its code; fails (after destroying it) on timeout. */
  public int awaitExit(Duration timeout) {
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        close();
        throw new AssertionError(name + " did not exit within " + timeout.toMillis()
            + " ms; its output:\n" + output);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
    return process.exitValue();
  }

  private String exitCode() {
    return process.isAlive() ? "still running" : String.valueOf(process.exitValue());
  }

  /** {@code failure} with the peer's output (after giving it a moment to finish printing). */
  public AssertionError withOutput(Throwable failure) {
    try {
      process.waitFor(3, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    AssertionError e = new AssertionError(failure.getMessage() + "\n" + name + " (exit "
        + exitCode() + ") output:\n" + output, failure);
    return e;
  }

  public String output() {
    return output.toString();
  }

  @Override
  public void close() {
    if (!process.isAlive()) return;
    process.destroy();
    try {
      if (!process.waitFor(3, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(3, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  // ---- small helpers shared by the peers and the tests

  public static String hex(byte[] b) {
    StringBuilder s = new StringBuilder(b.length * 2);
    for (byte x : b) s.append(String.format("%02x", x & 0xff));
    return s.toString();
  }

  public static byte[] unhex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }

  /** A peer's watchdog: ends the JVM if the test never lets it finish. */
  static void watchdog(Duration limit) {
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(limit.toMillis());
      } catch (InterruptedException e) {
        return;
      }
      System.out.println("PEER TIMEOUT after " + limit.toMillis() + " ms");
      System.out.flush();
      Runtime.getRuntime().halt(3);
    }, "peer-watchdog");
    t.setDaemon(true);
    t.start();
  }
}
