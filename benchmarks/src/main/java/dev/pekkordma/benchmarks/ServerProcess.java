package dev.pekkordma.benchmarks;

import dev.pekkordma.samples.perf.BwResult;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A benchmark's server in a JVM of its own, as every deployment runs the two ends: this JVM's
 * java, options and class path running {@code StreamBench --serve} with the test's options,
 * driven over its standard input ({@link BenchServer#serve}), plus the options in the system
 * property {@value #SERVER_OPTIONS} (a debugger's or a recording's, which this JVM's cannot
 * share). Its standard error is this process's; what it prints other than its answers is passed
 * on to this process's standard error.
 */
final class ServerProcess implements ServerEnd {
  /** A system property: options for the server's JVM alone, space-separated. */
  static final String SERVER_OPTIONS = "bench.server-options";

  private final Process process;
  private final BufferedReader answers;
  private final PrintWriter commands;
  private final String host;

  private ServerProcess(Process process, String host) {
    this.process = process;
    this.host = host;
    this.answers = new BufferedReader(new InputStreamReader(process.getInputStream(),
        StandardCharsets.US_ASCII));
    this.commands = new PrintWriter(process.getOutputStream(), true, StandardCharsets.US_ASCII);
  }

  /** Starts {@code StreamBench --serve} with {@code options} (the test's, as the client has them). */
  static ServerProcess start(List<String> options, String host) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    for (String o : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      // a debugger's port or a recording's file cannot be shared by two JVMs
      if (!o.startsWith("-agentlib:jdwp") && !o.startsWith("-XX:StartFlightRecording")) cmd.add(o);
    }
    // the server's own, e.g. a recording of its own: -Dbench.server-options="-XX:StartFlight..."
    String own = System.getProperty(SERVER_OPTIONS, "").trim();
    if (!own.isEmpty()) cmd.addAll(List.of(own.split("\\s+")));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(StreamBench.class.getName());
    cmd.addAll(options);
    cmd.add("--serve");
    return new ServerProcess(new ProcessBuilder(cmd)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start(), host);
  }

  /** The process's id, for the banner. */
  long pid() {
    return process.pid();
  }

  @Override
  public InetSocketAddress prepare(int size, long count) throws IOException {
    return new InetSocketAddress(host, Integer.parseInt(ask("run " + size + " " + count, "ready")));
  }

  @Override
  public BwResult await(int size, long count) throws IOException {
    String[] f = ask("await " + size + " " + count, "result").split(" ");
    return new BwResult(size, count, Double.parseDouble(f[0]), Double.parseDouble(f[1]),
        Double.parseDouble(f[2]));
  }

  @Override
  public long cpuNanos() throws IOException {
    return Long.parseLong(ask("cpu", "cpu"));
  }

  @Override
  public boolean inThisJvm() {
    return false;
  }

  /** Sends {@code command}; the answer's words after {@code expected}. */
  private String ask(String command, String expected) throws IOException {
    commands.println(command);
    for (String line; (line = answers.readLine()) != null; ) {
      if (!line.startsWith(BenchServer.REPLY)) {
        System.err.println("[server] " + line);
        continue;
      }
      String answer = line.substring(BenchServer.REPLY.length());
      if (answer.startsWith(expected + " ")) return answer.substring(expected.length() + 1);
      throw new IllegalStateException("the server process (pid " + process.pid()
          + ") answered '" + command + "' with: " + answer);
    }
    throw new IllegalStateException("the server process (pid " + process.pid() + ") ended"
        + exitCode() + " before it answered '" + command + "'");
  }

  private String exitCode() {
    try {
      return process.waitFor(5, TimeUnit.SECONDS) ? " with exit code " + process.exitValue() : "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "";
    }
  }

  @Override
  public void close() throws InterruptedException {
    commands.println("quit");
    commands.close();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      System.err.println("the server process (pid " + process.pid() + ") did not end within 60 s"
          + " of 'quit': killed");
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
  }
}
