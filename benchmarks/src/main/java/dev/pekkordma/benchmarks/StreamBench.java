package dev.pekkordma.benchmarks;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.samples.ByteSize;
import dev.pekkordma.samples.perf.BwResult;
import dev.pekkordma.samples.perf.LatResult;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.util.ByteString;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Stream throughput and ping-pong latency of a byte-stream transport, the server in a JVM of its
 * own as every deployment runs it ({@code --jvms 1}: in the client's, an extra labelled so),
 * printed in perftest's layout so that the report reads it like rdma-perf's, each result with the
 * CPU time both processes spent per message, and the machine's load.
 *
 * <ul>
 *   <li>throughput: for each chunk size a client streams {@code --bytes} in chunks of that size
 *       ({@code Source.repeat(chunk).take(n)}) into a server that counts them; timed from the first
 *       bytes' arrival at the server to the last's (not the connection's set-up, as perftest). The
 *       peak is the best tenth of the run.
 *   <li>latency: 64-byte pings echoed by the server, one at a time through a source queue and a
 *       sink queue; half the round trip is reported, as perftest's send_lat does.
 *   <li>zero-copy (RDMA only): the bulk pair without a copy on either side, {@link ZeroCopyBulk};
 *       timed as throughput is.
 * </ul>
 */
@Command(name = "stream-bench", mixinStandardHelpOptions = true,
    description = "Pekko Streams Tcp (or the RDMA streams layer) over loopback, in perftest's"
        + " layout.")
public final class StreamBench implements Callable<Integer> {
  @Option(names = "--transport", defaultValue = "tcp",
      description = "tcp: Pekko Streams Tcp; rdma: the streams layer, RdmaStreams"
          + " (default: ${DEFAULT-VALUE}).")
  String transport;

  @Option(names = "--provider", defaultValue = "soft",
      description = "The RDMA provider for --transport rdma: soft, native or auto"
          + " (default: ${DEFAULT-VALUE}).")
  String provider;

  @Option(names = "--test", defaultValue = "throughput",
      description = "throughput, latency, or zero-copy (the RDMA bulk pair bulkChunkSink ->"
          + " bulkBufferSource; --transport rdma) (default: ${DEFAULT-VALUE}).")
  String test;

  @Option(names = "--dispatcher", defaultValue = "default",
      description = "What runs the streams: default (Pekko's fork-join pool) or affinity (Pekko's"
          + " affinity pool, one thread per core: each stream keeps its thread, which spins a"
          + " little before parking) (default: ${DEFAULT-VALUE}).")
  String dispatcher;

  @Option(names = "--host", defaultValue = "127.0.0.1",
      description = "The address the server binds and the client connects to; on the native"
          + " provider one of an RDMA device's (rdma_cm cannot use loopback addresses)"
          + " (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--sizes", split = ",", converter = ByteSize.Converter.class,
      defaultValue = "4k,64k,1m", description = "Chunk sizes (default: ${DEFAULT-VALUE}).")
  List<Long> sizes;

  @Option(names = "--bytes", converter = ByteSize.Converter.class, defaultValue = "512m",
      description = "Bytes streamed per chunk size (default: ${DEFAULT-VALUE}).")
  long bytes;

  @Option(names = "--warmup-bytes", converter = ByteSize.Converter.class, defaultValue = "256m",
      description = "Bytes streamed before the first size, a quarter of it before the others"
          + " (default: ${DEFAULT-VALUE}).")
  long warmupBytes;

  @Option(names = {"-s", "--size"}, converter = ByteSize.Converter.class, defaultValue = "64",
      description = "Ping size for latency (default: ${DEFAULT-VALUE}).")
  long pingSize;

  @Option(names = {"-n", "--iters"}, defaultValue = "10000",
      description = "Pings for latency (default: ${DEFAULT-VALUE}).")
  int iterations;

  @Option(names = "--warmup", defaultValue = "5000",
      description = "Unmeasured pings first (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--config", defaultValue = "",
      description = "Extra configuration (HOCON) for the actor system (a server in a JVM of its"
          + " own gets it too).")
  String extraConfig;

  @Option(names = "--jvms", defaultValue = "2",
      description = "2: the server in a JVM of its own, started with this JVM's java, options and"
          + " class path, as deployments run; 1: server and client in this JVM (not a"
          + " deployment's shape: a labelled extra) (default: ${DEFAULT-VALUE}).")
  int jvms;

  @Option(names = "--serve", hidden = true,
      description = "Be the server of a two-JVM run, driven over standard input.")
  boolean serve;

  @Option(names = "--sample-metrics", defaultValue = "0",
      description = "With --transport rdma: read the streams' metrics and the ports' counters every"
          + " this many milliseconds while the test runs, and record every pekko-rdma Flight"
          + " Recorder event (the periodic ones at the same interval), as a monitored application"
          + " would be; 0: not (default: ${DEFAULT-VALUE}).")
  long sampleMillis;

  private final PrintStream out;

  StreamBench() {
    this(System.out);
  }

  StreamBench(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    int code = new CommandLine(new StreamBench()).execute(args);
    System.exit(code);
  }

  static Transport transport(String name) {
    if (name.equals("tcp")) return new TcpTransport();
    if (name.equals("tcp-framed")) return new TcpTransport(true);
    if (name.equals("rdma")) return new RdmaTransport();
    if (name.equals("in-jvm")) return new InJvmTransport(true);
    if (name.equals("none")) return new InJvmTransport(false);
    throw new CommandLine.ParameterException(new CommandLine(new StreamBench()),
        "--transport must be tcp, tcp-framed, rdma, in-jvm or none, was '" + name + "'");
  }

  @Override
  public Integer call() throws Exception {
    Transport t = transport(transport);
    if (!provider.equals("soft") && !provider.equals("native") && !provider.equals("auto")) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--provider must be soft, native or auto, was '" + provider + "'");
    }
    ActorSystem system = ActorSystem.create("stream-bench", ConfigFactory.parseString(
        "pekko.loglevel = WARNING\npekko.stdout-loglevel = WARNING\npekko-rdma.provider = "
            + provider + "\n" + dispatcherConfig() + "\n" + extraConfig)
        .withFallback(ConfigFactory.load()));
    if (sampleMillis < 0 || (sampleMillis > 0 && !(t instanceof RdmaTransport))) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--sample-metrics takes milliseconds >= 0, with --transport rdma; was " + sampleMillis);
    }
    if (jvms != 1 && jvms != 2) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--jvms must be 1 or 2, was " + jvms);
    }
    if (!test.equals("throughput") && !test.equals("latency") && !test.equals("zero-copy")) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--test must be throughput, latency or zero-copy, was '" + test + "'");
    }
    if (test.equals("zero-copy") && !(t instanceof RdmaTransport)) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--test zero-copy runs the RDMA streams' bulk pair: it needs --transport rdma, was '"
              + transport + "'");
    }
    if (serve) {
      try {
        new BenchServer(system, t, test, host).serve(System.in, out);
      } finally {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
      }
      return 0;
    }
    MetricsSampler sampler = sampleMillis == 0 ? null
        : new MetricsSampler(system, java.time.Duration.ofMillis(sampleMillis));
    try (ServerEnd server = jvms == 1 ? new BenchServer(system, t, test, host)
        : ServerProcess.start(List.of("--transport", transport, "--provider", provider,
            "--test", test, "--dispatcher", dispatcher, "--host", host, "--config",
            extraConfig), host)) {
      if (test.equals("throughput")) {
        bandwidth(t, server, "Stream throughput (" + t.name() + ")", null,
            (size, count) -> throughputRun(system, t, server, size, count));
      } else if (test.equals("latency")) {
        latency(system, t, server);
      } else {
        bandwidth(t, server, "Zero-copy bulk throughput (bulkChunkSink -> bulkBufferSource)",
            ZeroCopyBulk.SETTINGS, (size, count) -> zeroCopyRun(system, server, size, count));
      }
    } finally {
      if (sampler != null) {
        sampler.close();
        out.println(" Metrics sampled " + sampler.samples() + " times (last saw "
            + sampler.bytesSeen() + " bytes sent)");
      }
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
    return 0;
  }

  private String dispatcherConfig() {
    if (dispatcher.equals("default")) return "";
    if (dispatcher.equals("affinity")) {
      int cores = Runtime.getRuntime().availableProcessors();
      return "pekko.actor.default-dispatcher.executor = affinity-pool-executor\n"
          + "pekko.actor.default-dispatcher.affinity-pool-executor { parallelism-min = " + cores
          + ", parallelism-max = " + cores + ", idle-cpu-level = 1 }";
    }
    throw new CommandLine.ParameterException(new CommandLine(this),
        "--dispatcher must be default or affinity, was '" + dispatcher + "'");
  }

  private void banner(Transport t, ServerEnd server, String title, String settings) {
    out.println(RULE);
    out.println("                    " + title);
    out.println(" Transport       : " + t.name() + " over " + host
        + (t instanceof RdmaTransport ? ", " + provider + " provider" : ""));
    out.println(" Processes       : " + (server instanceof ServerProcess p
        ? "the server in a JVM of its own (pid " + p.pid() + "), the client in this one"
        : "server and client in this JVM (one JVM: not a deployment's shape)"));
    out.println(" Load            : " + load() + " (the machine's load average, before)");
    if (settings != null) out.println(" Settings        : " + settings);
    if (sampleMillis > 0) {
      out.println(" Metrics         : read every " + sampleMillis + " ms, with every pekko-rdma"
          + " JFR event recorded (--sample-metrics)");
    }
    if (!dispatcher.equals("default")) {
      out.println(" Dispatcher      : Pekko's affinity pool, idle-cpu-level 1 (--dispatcher)");
    }
    out.println(" Java            : " + System.getProperty("java.version") + ", "
        + Runtime.getRuntime().availableProcessors() + " cores");
    out.println(RULE);
  }

  /** The machine's 1, 5 and 15 minute load averages, or why not. */
  static String load() {
    try {
      String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"))
          .split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (java.io.IOException | RuntimeException e) {
      return String.format("%.2f", java.lang.management.ManagementFactory
          .getOperatingSystemMXBean().getSystemLoadAverage());
    }
  }

  /** CPU time both ends spent over a run, per message. */
  private void cpuLine(ServerEnd server, long clientBefore, long serverBefore, long messages)
      throws Exception {
    long client = ServerEnd.processCpuNanos() - clientBefore;
    if (server.inThisJvm()) {
      out.printf(" CPU per message : %.2f us (this JVM, both ends)%n", client / 1e3 / messages);
    } else {
      long srv = server.cpuNanos() - serverBefore;
      out.printf(" CPU per message : client %.2f us, server %.2f us%n", client / 1e3 / messages,
          srv / 1e3 / messages);
    }
  }

  static final String RULE =
      "---------------------------------------------------------------------------------------";

  /** Counts bytes at the server, stamping each tenth of the run. */
  static final class Counter {
    final AtomicLong received = new AtomicLong();
    final long total;
    final long[] tenths = new long[10];
    final CompletableFuture<Long> done = new CompletableFuture<>();
    private volatile long first; // when the first bytes arrived
    private volatile long firstBytes; // and how many


    Counter(long total) {
      this.total = total;
    }

    void add(int n) {
      long before = received.getAndAdd(n);
      long after = before + n;
      if (before == 0) {
        firstBytes = n;
        first = System.nanoTime();
      }
      int from = (int) (before * 10 / total);
      int to = (int) Math.min(10, after * 10 / total);
      if (to > from) {
        long now = System.nanoTime();
        for (int k = from; k < to; k++) tenths[k] = now;
      }
      if (after >= total && before < total) done.complete(System.nanoTime());
    }

    /**
     * The run's line: the average from the first bytes' arrival to the last's (what came after
     * the first bytes over that time: the connection's set-up is not timed, as perftest does not
     * time its own), and the best tenth's peak. {@code start} is used only if all came at once.
     */
    BwResult result(int size, long count, long start, long end) {
      long from = first < end ? first : start;
      long moved = first < end ? total - firstBytes : total;
      double seconds = (end - from) / 1e9;
      double avg = moved / seconds / 1048576.0;
      double peak = avg;
      long prev = from;
      for (int k = 0; k < 10; k++) {
        long dt = tenths[k] - prev;
        if (dt > 0) peak = Math.max(peak, total / 10.0 / (dt / 1e9) / 1048576.0);
        prev = tenths[k];
      }
      return new BwResult(size, count, peak, avg, count / seconds / 1e6);
    }

    /** When the last byte arrived; fails saying how far it got. */
    long awaitDone() throws Exception {
      try {
        return done.get(300, TimeUnit.SECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        throw new IllegalStateException("the server had " + received.get() + " of " + total
            + " bytes after 300 s");
      }
    }
  }

  /** One timed run of {@code count} chunks of {@code size} bytes. */
  interface Measure {
    BwResult run(int size, long count) throws Exception;
  }

  /**
   * Every size after its warm-up (the first size's longer), a perftest line each and the CPU
   * both ends spent per chunk.
   */
  private void bandwidth(Transport t, ServerEnd server, String title, String settings,
      Measure measure) throws Exception {
    banner(t, server, title, settings);
    out.println(BwResult.HEADER);
    boolean first = true;
    for (long size : new TreeSet<>(sizes)) {
      long warm = first ? warmupBytes : warmupBytes / 4;
      if (warm >= size) measure.run((int) size, warm / size);
      long count = Math.max(1, bytes / size);
      long clientCpu = ServerEnd.processCpuNanos();
      long serverCpu = server.cpuNanos();
      BwResult r = measure.run((int) size, count);
      out.println(r.line());
      cpuLine(server, clientCpu, serverCpu, count);
      out.flush();
      first = false;
    }
    out.println(RULE);
  }

  /** The counter of the run in progress (one connection at a time). */
  static final class AtomicReferenceCounter {
    private volatile Counter counter = new Counter(Long.MAX_VALUE);

    Counter get() {
      return counter;
    }

    void set(Counter c) {
      counter = c;
    }
  }

  /** One connection streams {@code count} chunks; the server closes it once it has them all. */
  private static BwResult throughputRun(ActorSystem system, Transport t, ServerEnd server,
      int size, long count) throws Exception {
    InetSocketAddress at = server.prepare(size, count);
    ByteString chunk = ByteString.fromArray(new byte[size]);
    CompletableFuture<?> client = Source.repeat(chunk).take(count)
        .via(t.outgoing(system, at)).runWith(Sink.ignore(), system).toCompletableFuture();
    BwResult r = server.await(size, count);
    client.exceptionally(e -> null).get(30, TimeUnit.SECONDS);
    return r;
  }

  private static BwResult zeroCopyRun(ActorSystem system, ServerEnd server, int size, long count)
      throws Exception {
    InetSocketAddress at = server.prepare(size, count);
    CompletableFuture<dev.pekkordma.streams.TransferResult> tx =
        ZeroCopyBulk.send(system, at, size, count).toCompletableFuture();
    BwResult r = server.await(size, count);
    ZeroCopyBulk.checkSent(tx.get(30, TimeUnit.SECONDS), size, count);
    return r;
  }

  private void latency(ActorSystem system, Transport t, ServerEnd server) throws Exception {
    banner(t, server, "Stream ping-pong latency (" + t.name() + ")", null);
    int size = (int) pingSize;
    InetSocketAddress at = server.prepare(size, iterations);
    Pair<SourceQueueWithComplete<ByteString>, SinkQueueWithCancel<ByteString>> q =
        Source.<ByteString>queue(4, OverflowStrategy.backpressure())
            .via(t.outgoing(system, at))
            .toMat(Sink.queue(), Keep.both())
            .run(system);
    ByteString ping = ByteString.fromArray(new byte[size]);
    long[] posted = new long[iterations];
    for (int i = 0; i < warmup; i++) pingPong(q, ping, size);
    long clientCpu = ServerEnd.processCpuNanos();
    long serverCpu = server.cpuNanos();
    for (int i = 0; i < iterations; i++) {
      posted[i] = System.nanoTime();
      pingPong(q, ping, size);
    }
    long serverCpuAfter = server.cpuNanos(); // before the close's work is counted
    long clientCpuAfter = ServerEnd.processCpuNanos();
    // end of data; the echo server then closes, which ends the client's side too
    q.first().complete();
    while (q.second().pull().toCompletableFuture().get(30, TimeUnit.SECONDS).isPresent()) {
      // drain
    }
    out.println(LatResult.HEADER);
    out.println(LatResult.of(size, iterations, posted, 2).line());
    if (server.inThisJvm()) {
      out.printf(" CPU per message : %.2f us (this JVM, both ends; a message is a round trip)%n",
          (clientCpuAfter - clientCpu) / 1e3 / iterations);
    } else {
      out.printf(" CPU per message : client %.2f us, server %.2f us (a message is a round"
          + " trip)%n", (clientCpuAfter - clientCpu) / 1e3 / iterations,
          (serverCpuAfter - serverCpu) / 1e3 / iterations);
    }
    out.println(RULE);
  }

  private static void pingPong(
      Pair<SourceQueueWithComplete<ByteString>, SinkQueueWithCancel<ByteString>> q,
      ByteString ping, int size) throws Exception {
    q.first().offer(ping).toCompletableFuture().get(30, TimeUnit.SECONDS);
    int got = 0;
    while (got < size) {
      Optional<ByteString> b = q.second().pull().toCompletableFuture().get(30, TimeUnit.SECONDS);
      if (b.isEmpty()) throw new IllegalStateException("the echo server closed the connection");
      got += b.get().size();
    }
  }
}
