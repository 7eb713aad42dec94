package dev.pekkordma.benchmarks;

import com.typesafe.config.ConfigFactory;
import java.io.PrintStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.Done;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Many connections at once, the echo server in a JVM of its own as deployments run it ({@code
 * --jvms 1}: in this one, an extra labelled so), for each N: how long a connection takes to open
 * (all N opened with at most {@code --concurrency} in flight), what N idle connections cost the
 * client's process (registered and direct memory, threads, CPU while idle), how many 64-byte
 * messages the N of them echo per second when they all send at once, and the CPU time both
 * processes spend per echoed message. A failure (a refused connect, too many open files) ends
 * that N and is reported with how far it got.
 */
@Command(name = "scale-bench", mixinStandardHelpOptions = true,
    description = "N echo connections of Pekko Streams Tcp (or the RDMA streams layer) in one"
        + " JVM: connect time, memory, threads, idle CPU and echo rate.")
public final class ScaleBench implements Callable<Integer> {
  static final String HEADER = String.format(
      "%-13s %7s %7s %10s %10s %11s %11s %8s %8s %12s %10s  %s", "transport", "N", "opened",
      "conn_us", "p99_us", "reg_B/conn", "dir_B/conn", "threads", "idle_cpu", "echo_msg/s",
      "cpu_us/msg", "first failure");

  @Option(names = "--transport", defaultValue = "tcp",
      description = "tcp: Pekko Streams Tcp; tcp-framed: Tcp with a length before each"
          + " ByteString (Framing.simpleFramingProtocol), so that what arrives is what was sent;"
          + " rdma: RdmaStreams; in-jvm: no transport, each connection's server an island of its"
          + " own behind Pekko's asynchronous boundaries; none: no connection at all"
          + " (Flow.create()), the benchmark's client alone (default: ${DEFAULT-VALUE}).")
  String transport;

  @Option(names = "--provider", defaultValue = "soft",
      description = "The RDMA provider for --transport rdma (default: ${DEFAULT-VALUE}).")
  String provider;

  @Option(names = "--jvms", defaultValue = "2",
      description = "2: the echo server in a JVM of its own (StreamBench's server), as"
          + " deployments run; 1: in this JVM (not a deployment's shape: a labelled extra; the"
          + " only shape for in-jvm and none) (default: ${DEFAULT-VALUE}).")
  int jvms;

  @Option(names = "--host", defaultValue = "127.0.0.1",
      description = "The address the server binds (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(names = {"-N", "--connections"}, split = ",", defaultValue = "1,100,1000,10000",
      description = "Connection counts, one run each (default: ${DEFAULT-VALUE}).")
  List<Integer> counts;

  @Option(names = "--concurrency", defaultValue = "1000",
      description = "Connects in flight at once (default: ${DEFAULT-VALUE}).")
  int concurrency;

  @Option(names = "--connect-pause", defaultValue = "0",
      description = "Milliseconds to wait before each connect, so that each meets a quiet"
          + " process, as connections opened now and then do; conn_us is then the mean of the"
          + " connects' own times, the pauses left out (default: ${DEFAULT-VALUE}).")
  int connectPauseMillis;

  @Option(names = "--messages", defaultValue = "20000000",
      description = "Messages echoed in all per N, spread over the connections, at least one"
          + " each; enough that at N = 10,000 the rate is the connections' steady one, not"
          + " their first and last messages' (default: ${DEFAULT-VALUE}).")
  int messages;

  @Option(names = "--warmup-messages", defaultValue = "1000000",
      description = "Messages echoed over ten connections before the first N, untimed, so that"
          + " every N is measured with the JIT's work done (default: ${DEFAULT-VALUE}).")
  int warmupMessages;

  @Option(names = "--warmup-connections", defaultValue = "2000",
      description = "Connections opened (each echoing one message) before the first N, untimed,"
          + " so that connecting too is measured with the JIT's work done; each N still starts"
          + " in an actor system of its own (default: ${DEFAULT-VALUE}).")
  int warmupConnections;

  @Option(names = {"-s", "--size"}, defaultValue = "64",
      description = "Message size in bytes (default: ${DEFAULT-VALUE}).")
  int size;

  @Option(names = "--idle-seconds", defaultValue = "2",
      description = "How long the idle CPU is measured (default: ${DEFAULT-VALUE}).")
  int idleSeconds;

  @Option(names = "--config", defaultValue = "",
      description = "Extra configuration (HOCON) for the actor system.")
  String extraConfig;

  @Option(names = "--tsv",
      description = "Also append each N's figures to this file, tab-separated, for ScaleReport.")
  java.nio.file.Path tsv;

  private final PrintStream out;

  ScaleBench() {
    this(System.out);
  }

  ScaleBench(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new ScaleBench()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Transport t = StreamBench.transport(transport);
    if (jvms != 1 && jvms != 2) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--jvms must be 1 or 2, was " + jvms);
    }
    if (jvms == 2 && t instanceof InJvmTransport) {
      throw new CommandLine.ParameterException(new CommandLine(this), "--transport " + transport
          + " has no server to run in another JVM: it needs --jvms 1");
    }
    try (ServerProcess server = jvms == 1 ? null : ServerProcess.start(List.of("--transport",
        transport, "--provider", provider, "--test", "latency", "--host", host, "--config",
        extraConfig), host)) {
      return call(t, server);
    }
  }

  /** With {@code server} null, each N's echo server runs in this JVM. */
  private int call(Transport t, ServerProcess server) throws Exception {
    out.println(StreamBench.RULE);
    out.println(" Scaling: N echo connections (" + t.name()
        + (t instanceof RdmaTransport ? ", " + provider + " provider" : "") + ")");
    out.println(" Processes: " + (server != null
        ? "the server in a JVM of its own (pid " + server.pid() + "), the client in this one;"
            + " memory, threads and idle CPU are the client's"
        : "server and client in this JVM (one JVM: not a deployment's shape)"));
    out.println(" Load: " + StreamBench.load() + " (the machine's load average, before)");
    out.println(" Java " + System.getProperty("java.version") + ", "
        + Runtime.getRuntime().availableProcessors() + " cores, max heap "
        + Runtime.getRuntime().maxMemory() / (1 << 20) + " MiB; " + size + "-byte messages, "
        + concurrency + " connects in flight at most");
    out.println(StreamBench.RULE);
    if (warmupMessages > 0) run(t, server, 10, warmupMessages);
    if (warmupConnections > 0) run(t, server, warmupConnections, warmupConnections);
    out.println(HEADER);
    for (int n : counts) {
      Result r = run(t, server, n, messages);
      out.println(r.line());
      out.flush();
      if (tsv != null) {
        java.nio.file.Files.writeString(tsv, r.tsv() + "\n", java.nio.file.StandardOpenOption.CREATE,
            java.nio.file.StandardOpenOption.APPEND);
      }
    }
    out.println(StreamBench.RULE);
    return 0;
  }

  /** One N's figures. */
  /** One N's figures; {@code cpuPerMessage}: both processes' CPU per echo, microseconds. */
  record Result(String transport, int n, int opened, double connectMicros, double p99Micros,
      long registeredPerConnection, long directPerConnection, int threads, double idleCpu,
      double echoRate, double cpuPerMessage, String failure) {
    String line() {
      return String.format("%-13s %7d %7d %10.1f %10.1f %11d %11d %8d %7.1f%% %12.0f %10.2f  %s",
          transport, n, opened, connectMicros, p99Micros, registeredPerConnection,
          directPerConnection, threads, idleCpu, echoRate, cpuPerMessage,
          failure == null ? "-" : failure);
    }

    String tsv() {
      return String.join("\t", transport, String.valueOf(n), String.valueOf(opened),
          String.format("%.1f", connectMicros), String.format("%.1f", p99Micros),
          String.valueOf(registeredPerConnection), String.valueOf(directPerConnection),
          String.valueOf(threads), String.format("%.1f", idleCpu), String.format("%.0f", echoRate),
          String.format("%.2f", cpuPerMessage), failure == null ? "-" : failure);
    }

    /** A line written by {@link #tsv}. */
    static Result parse(String line) {
      String[] f = line.split("\t", 12);
      return new Result(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]),
          Double.parseDouble(f[3]), Double.parseDouble(f[4]), Long.parseLong(f[5]),
          Long.parseLong(f[6]), Integer.parseInt(f[7]), Double.parseDouble(f[8]),
          Double.parseDouble(f[9]), Double.parseDouble(f[10]), f[11].equals("-") ? null : f[11]);
    }
  }

  private Result run(Transport t, ServerProcess remote, int n, int messages) throws Exception {
    ActorSystem system = ActorSystem.create("scale-bench", ConfigFactory.parseString(
        "pekko.loglevel = ERROR\npekko.stdout-loglevel = ERROR\npekko-rdma.provider = " + provider
            + "\n" + extraConfig).withFallback(ConfigFactory.load()));
    try {
      InetSocketAddress server = remote != null ? remote.prepare(size, messages)
          : t.bind(system, host, () -> Flow.<ByteString>create())
              .toCompletableFuture().get(30, TimeUnit.SECONDS);
      System.gc();
      Footprint before = Footprint.now(t, system);
      int perConnection = Math.max(1, messages / n);
      ByteString message = ByteString.fromArray(new byte[size]);
      CompletableFuture<Done> go = new CompletableFuture<>();
      long expected = (long) perConnection * size * n;
      java.util.concurrent.atomic.AtomicLong received = new java.util.concurrent.atomic.AtomicLong();
      CompletableFuture<Long> allEchoed = new CompletableFuture<>();
      List<CompletableFuture<Long>> echoed = new ArrayList<>(n);
      long[] connectNanos = new long[n];
      Semaphore inFlight = new Semaphore(concurrency);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      long start = System.nanoTime();
      int opened = 0;
      List<CompletableFuture<?>> connects = new ArrayList<>(n);
      for (int i = 0; i < n && failure.get() == null; i++) {
        inFlight.acquire();
        if (failure.get() != null) break;
        if (connectPauseMillis > 0) Thread.sleep(connectPauseMillis);
        int index = i;
        long began = System.nanoTime();
        Flow<ByteString, ByteString, ? extends CompletionStage<?>> flow = t.outgoing(system, server);
        Pair<? extends CompletionStage<?>, CompletionStage<Long>> m =
            Source.completionStage(go).flatMapConcat(d -> Source.repeat(message).take(perConnection))
                .viaMat(flow, Keep.right())
                .toMat(Sink.fold(0L, (sum, b) -> {
                  if (received.addAndGet(b.size()) == expected) allEchoed.complete(System.nanoTime());
                  return sum + b.size();
                }), Keep.both())
                .run(system);
        CompletableFuture<?> c = m.first().toCompletableFuture().whenComplete((ok, e) -> {
          connectNanos[index] = System.nanoTime() - began;
          if (e != null) failure.compareAndSet(null, e);
          inFlight.release();
        });
        connects.add(c);
        echoed.add(m.second().toCompletableFuture());
      }
      for (CompletableFuture<?> c : connects) {
        try {
          c.get(120, TimeUnit.SECONDS);
          opened++;
        } catch (Exception e) {
          failure.compareAndSet(null, e);
        }
      }
      long connectTime = System.nanoTime() - start;
      if (connectPauseMillis > 0) connectTime = Arrays.stream(connectNanos).sum();
      Thread.sleep(500);
      System.gc();
      Footprint idle = Footprint.now(t, system);
      double idleCpu = idle.cpuPercentOver(idleSeconds);
      double rate = 0;
      double cpuPerMessage = 0;
      if (failure.get() == null) {
        long clientCpu = ServerEnd.processCpuNanos();
        long serverCpu = remote == null ? 0 : remote.cpuNanos();
        long sent = System.nanoTime();
        go.complete(Done.getInstance());
        // the rate counts to the last echo's arrival; the connections' ends are not timed
        long last;
        try {
          last = allEchoed.get(300, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
          throw new IllegalStateException(received.get() + " of " + expected
              + " bytes echoed after 300 s");
        }
        rate = (double) perConnection * n / ((last - sent) / 1e9);
        long cpu = ServerEnd.processCpuNanos() - clientCpu
            + (remote == null ? 0 : remote.cpuNanos() - serverCpu);
        cpuPerMessage = cpu / 1e3 / ((double) perConnection * n);
        long each = (long) perConnection * size;
        for (CompletableFuture<Long> e : echoed) {
          long got = e.get(300, TimeUnit.SECONDS);
          if (got != each) {
            throw new IllegalStateException("a connection echoed " + got + " of " + each
                + " bytes");
          }
        }
      } else {
        go.completeExceptionally(new IllegalStateException("the run failed"));
      }
      long[] sorted = Arrays.copyOf(connectNanos, opened);
      Arrays.sort(sorted);
      int counted = Math.max(1, opened);
      return new Result(t.name(), n, opened, connectTime / 1e3 / counted,
          opened == 0 ? 0 : sorted[(int) Math.min(opened - 1, Math.ceil(opened * 0.99) - 1)] / 1e3,
          (idle.registered - before.registered) / counted, (idle.direct - before.direct) / counted,
          idle.threads, idleCpu, rate, cpuPerMessage, describe(failure.get()));
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(120, TimeUnit.SECONDS);
    }
  }

  private static String describe(Throwable e) {
    if (e == null) return null;
    Throwable root = e;
    while ((root instanceof java.util.concurrent.ExecutionException
        || root instanceof java.util.concurrent.CompletionException) && root.getCause() != null) {
      root = root.getCause();
    }
    String text = root.getClass().getSimpleName() + ": " + root.getMessage();
    return text.replace('\n', ' ');
  }

  /** What the process holds at one moment. */
  record Footprint(long registered, long direct, int threads) {
    static Footprint now(Transport t, ActorSystem system) {
      long direct = 0;
      for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
        if (b.getName().equals("direct")) direct = b.getMemoryUsed();
      }
      return new Footprint(t.registeredBytes(system), direct,
          ManagementFactory.getThreadMXBean().getThreadCount());
    }

    /** The process's CPU use over the next {@code seconds}, in percent of one core. */
    double cpuPercentOver(int seconds) throws InterruptedException {
      com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
          ManagementFactory.getOperatingSystemMXBean();
      long cpu = os.getProcessCpuTime();
      long wall = System.nanoTime();
      Thread.sleep(seconds * 1000L);
      return 100.0 * (os.getProcessCpuTime() - cpu) / (System.nanoTime() - wall);
    }
  }
}
