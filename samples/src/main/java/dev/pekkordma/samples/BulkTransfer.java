package dev.pekkordma.samples;

import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The bulk-transfer sample: a server and a client that move data over RDMA, verify a CRC32C on
 * both sides and print the throughput. With no subcommand (or {@code demo}) both run in this JVM
 * over loopback; {@code server} and {@code client} run them in two processes.
 *
 * <p>Exit codes: 0 when the data arrived intact, 1 when the transfer failed or the checksums
 * differ, 2 for bad command-line input.
 */
@Command(name = "pekko-rdma transfer", mixinStandardHelpOptions = true,
    description = "Moves data over RDMA, verifies CRC32C checksums and prints throughput. With no"
        + " subcommand, runs the demo: server and client in this JVM on 127.0.0.1.",
    footer = {"", "Examples:",
        "  pekko-rdma transfer --size 1g                    demo in one JVM",
        "  pekko-rdma transfer server --bind 127.0.0.1:18515",
        "  pekko-rdma transfer client --connect 127.0.0.1:18515 --size 4g --mode send"},
    subcommands = CommandLine.HelpCommand.class)
public final class BulkTransfer implements Callable<Integer> {

  @Mixin TransferOptions transfer;
  @Mixin BulkOptions common;

  private final PrintStream out;

  BulkTransfer(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    // exit here: under `mvn exec:java` this ends Maven's JVM with our code, provider threads or not
    System.exit(execute(args, System.out, System.err));
  }

  /** Runs the command line and returns the exit code (the tests call this). */
  public static int execute(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(
        args,
        out,
        err,
        BulkTransfer::describe,
        new BulkTransfer(out),
        new Demo(out),
        new BulkServerCommand(out),
        new BulkClientCommand(out));
  }

  static String describe(Throwable e) {
    if (e instanceof TransferFailure || e instanceof IllegalArgumentException) return e.getMessage();
    return SampleCommandLine.withClassName(e);
  }

  @Override
  public Integer call() {
    return runDemo(transfer, common, out);
  }

  /** What to move: shared by demo and client. */
  static final class TransferOptions {
    @Option(names = "--size", paramLabel = "BYTES", defaultValue = "1g",
        converter = ByteSize.Converter.class,
        description = "How much to move, e.g. 64k, 512m, 1g, 4g (default: ${DEFAULT-VALUE}).")
    long size;

    @Option(names = "--chunk", paramLabel = "BYTES", defaultValue = "1m",
        converter = ByteSize.Converter.class,
        description = "Bytes per request, at most --size (default: ${DEFAULT-VALUE}, or --size"
            + " when that is smaller).")
    long chunk;

    @Option(names = "--depth", paramLabel = "N", defaultValue = "16",
        description = "Requests in flight at most (default: ${DEFAULT-VALUE}).")
    int depth;

    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "write",
        description = "write: RDMA WRITE WITH IMM into the server's ring; send: SEND/RECV"
            + " (default: ${DEFAULT-VALUE}).")
    TransferMode mode;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "1",
        description = "Seed of the generated data (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "30",
        description = "Give up after this long without progress (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Option(names = "--corrupt-at", hidden = true, defaultValue = "-1",
        description = "Test hook: flip the byte at this offset after checksumming it.")
    long corruptAt;

    BulkClient.ClientSettings settings(long sourceLimit) {
      BulkClient.validate(size, chunk, depth);
      long chunk = Math.min(this.chunk, size); // a request never carries more than there is
      if (chunk > Integer.MAX_VALUE) {
        throw new BadOption("--chunk " + ByteSize.format(chunk)
            + " is too large: at most " + Integer.MAX_VALUE + " bytes (2 GiB - 1) per request");
      }
      if (timeoutSeconds <= 0) {
        throw new BadOption("--timeout must be positive, was " + timeoutSeconds);
      }
      return new BulkClient.ClientSettings(size, (int) chunk, depth, mode, seed, sourceLimit,
          Duration.ofSeconds(timeoutSeconds), 200, corruptAt);
    }
  }

  /** How to run: shared by every command. */
  static final class BulkOptions implements SampleCommandLine.Verbose {
    @Option(names = {"-v", "--verbose"},
        description = "Say more: connection details, the provider's live resources at the end.")
    boolean verbose;

    @Option(names = "--progress", paramLabel = "KIND", defaultValue = "auto",
        description = "auto (a bar on a terminal, else a line per quarter), bar, plain or none"
            + " (default: ${DEFAULT-VALUE}).")
    Progress.Display progress;

    @Mixin SharedOptions.ProviderChoice provider;

    @Option(names = "--ring-limit", paramLabel = "BYTES", defaultValue = "256m",
        converter = ByteSize.Converter.class,
        description = "Most memory for the server's ring and for the client's source buffers"
            + " (default: ${DEFAULT-VALUE}).")
    long ringLimit;

    @Override
    public boolean verbose() {
      return verbose;
    }

    RdmaProvider loadProvider() {
      return provider.load();
    }
  }

  @Command(name = "demo", mixinStandardHelpOptions = true,
      description = "Server and client in this JVM on 127.0.0.1 (the default).")
  static final class Demo implements Callable<Integer> {
    @Mixin TransferOptions transfer;
    @Mixin BulkOptions common;
    private final PrintStream out;

    Demo(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() {
      return runDemo(transfer, common, out);
    }
  }

  @Command(name = "server", mixinStandardHelpOptions = true,
      description = "Waits for one client, receives its data, checks it and exits.")
  static final class BulkServerCommand implements Callable<Integer> {
    @Mixin SharedOptions.Listen listen;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "30",
        description = "Give up after this long without data (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Mixin BulkOptions common;
    private final PrintStream out;

    BulkServerCommand(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() {
      Duration acceptTimeout = listen.acceptTimeout();
      if (timeoutSeconds <= 0) throw new BadOption("--timeout must be positive");
      try (RdmaProvider provider = common.loadProvider()) {
        ResourceCounts before = provider.liveResources();
        BulkServer.ServerResult r;
        requireCm(provider);
        try (BulkServer server =
            BulkServer.listen(
                provider,
                listen.address(),
                new BulkServer.ServerOptions(
                    common.ringLimit, Duration.ofSeconds(timeoutSeconds), 200),
                out,
                common.verbose)) {
          out.println("server: listening on " + format(server.localAddress()) + " ("
              + provider.name() + " provider)");
          r = server.serveOne(acceptTimeout, common.progress);
        }
        out.printf(Locale.ROOT, "received     %d bytes (%s) in %d chunks, %.3f s%n", r.bytes(),
            ByteSize.format(r.bytes()), r.chunks(), r.seconds());
        out.printf(Locale.ROOT, "throughput   %.1f MiB/s, %.2f Gbit/s%n",
            r.bytes() / 1048576.0 / r.seconds(), r.bytes() * 8 / 1e9 / r.seconds());
        out.println("checksums    client crc32c=" + ChecksumVerifier.hex(r.clientCrc())
            + ", server crc32c=" + ChecksumVerifier.hex(r.crc()));
        out.println(r.check().describe());
        reportResources(provider, before, common.verbose, out);
        return r.check().ok() ? 0 : 1;
      }
    }
  }

  @Command(name = "client", mixinStandardHelpOptions = true,
      description = "Connects to a server and sends it the data.")
  static final class BulkClientCommand implements Callable<Integer> {
    @Mixin SharedOptions.ConnectTarget connect;

    @Mixin TransferOptions transfer;
    @Mixin BulkOptions common;
    private final PrintStream out;

    BulkClientCommand(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() {
      BulkClient.ClientSettings settings = transfer.settings(common.ringLimit);
      try (RdmaProvider provider = common.loadProvider()) {
        requireCm(provider);
        ResourceCounts before = provider.liveResources();
        BulkClient.ClientResult r = new BulkClient(provider, settings, out, common.verbose)
            .run(connect.address(), common.progress);
        printSummary(r, settings, provider.name(), out);
        reportResources(provider, before, common.verbose, out);
        return r.ok() ? 0 : 1;
      }
    }
  }

  /** The outcome of a demo run, for tests. */
  record DemoOutcome(
      BulkClient.ClientResult client, BulkServer.ServerResult server, ResourceCounts leaked) {}

  static int runDemo(TransferOptions transfer, BulkOptions common, PrintStream out) {
    BulkClient.ClientSettings settings = transfer.settings(common.ringLimit);
    try (RdmaProvider provider = common.loadProvider()) {
      DemoOutcome o = demo(provider, settings, common, out);
      printSummary(o.client(), settings, provider.name(), out);
      if (common.verbose) {
        out.println("server saw   " + o.server().check().describe());
        printAllocations("client", o.client().loopAllocatedBytes(), o.client().chunks(), out);
        printAllocations("server", o.server().loopAllocatedBytes(), o.server().chunks(), out);
      }
      printResources(o.leaked(), common.verbose, out);
      return o.client().ok() && o.server().check().ok() ? 0 : 1;
    }
  }

  /** Server on a thread, client here, both on {@code provider}; everything closed at the end. */
  static DemoOutcome demo(
      RdmaProvider provider,
      BulkClient.ClientSettings settings,
      BulkOptions common,
      PrintStream out) {
    return demo(provider, settings, common, out,
        provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER));
  }

  /** The demo through the connection manager ({@code cm}) or with QPs connected by hand. */
  static DemoOutcome demo(RdmaProvider provider, BulkClient.ClientSettings settings,
      BulkOptions common, PrintStream out, boolean cm) {
    ResourceCounts before = provider.liveResources();
    BulkServer.ServerOptions serverOptions =
        new BulkServer.ServerOptions(common.ringLimit, settings.timeout(), settings.spins());
    BulkClient.ClientResult client;
    BulkServer.ServerResult server;
    HandLink hand = cm ? null : new HandLink(provider);
    BulkLink.Listener listener = cm
        ? CmBulkLink.listen(provider, new InetSocketAddress("127.0.0.1", 0), out, common.verbose)
        : hand;
    BulkLink.Dialer connector = cm ? CmBulkLink.connector(provider) : hand;
    try (BulkServer srv = new BulkServer(listener, serverOptions, out, common.verbose)) {
      if (common.verbose) {
        out.println("demo: " + provider.name() + " provider, " + (cm
            ? "connection manager, server on " + format(srv.localAddress())
            : "no connection manager: QPs connected by hand"));
      }
      CompletableFuture<BulkServer.ServerResult> serverRun = new CompletableFuture<>();
      Thread t = new Thread(() -> {
        try {
          serverRun.complete(srv.serveOne(Duration.ofSeconds(30), Progress.Display.NONE));
        } catch (Throwable e) {
          serverRun.completeExceptionally(e);
        }
      }, "bulk-transfer-server");
      t.setDaemon(true);
      t.start();
      try {
        client = new BulkClient(provider, settings, out, common.verbose)
            .run(connector, srv.localAddress(), common.progress);
      } catch (RuntimeException clientFailure) {
        srv.stop();
        if (clientFailure instanceof BadOption || !srv.clientSeen()) throw clientFailure;
        // the server's failure, if any, is usually the cause: report it first
        try {
          serverRun.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          TransferFailure f = new TransferFailure(describe(e.getCause())
              + "; the client then failed: " + describe(clientFailure), e.getCause());
          f.addSuppressed(clientFailure);
          throw f;
        } catch (InterruptedException | TimeoutException e) {
          clientFailure.addSuppressed(e);
        }
        throw clientFailure;
      }
      try {
        server = serverRun.get(settings.timeout().toSeconds() + 15, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        throw new TransferFailure("server: " + describe(e.getCause()), e.getCause());
      } catch (InterruptedException | TimeoutException e) {
        throw new TransferFailure("the server did not finish", e);
      }
    }
    return new DemoOutcome(client, server, provider.liveResources().minus(before));
  }

  static void requireCm(RdmaProvider provider) {
    if (!provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER)) {
      throw new TransferFailure("the " + provider.name() + " provider has no connection manager"
          + " (yet): server and client need one; the demo (no subcommand) works without");
    }
  }

  static void printSummary(
      BulkClient.ClientResult r, BulkClient.ClientSettings s, String provider, PrintStream out) {
    out.printf(Locale.ROOT, "transferred  %d bytes (%s) in %.3f s (%s, %s chunks, %d in flight,"
            + " %s provider)%n", r.bytes(), ByteSize.format(r.bytes()), r.seconds(),
        s.mode().name().toLowerCase(Locale.ROOT), ByteSize.format(s.chunkSize()), r.window(),
        provider);
    out.printf(Locale.ROOT, "throughput   %.1f MiB/s, %.2f Gbit/s%n", r.mibPerSecond(),
        r.gbitPerSecond());
    out.println("checksums    client crc32c=" + ChecksumVerifier.hex(r.clientCrc())
        + ", server crc32c=" + ChecksumVerifier.hex(r.serverCrc()));
    if (r.ok()) {
      out.println("checksum OK");
    } else {
      out.println("FAILED: " + (r.check().ok() ? "the server rejected the data"
          : r.check().describe()));
    }
  }

  static void printAllocations(String side, long bytes, long chunks, PrintStream out) {
    if (bytes < 0) return;
    out.printf(Locale.ROOT, "allocations  %s data path: %d bytes on the heap for %d chunks%n", side,
        bytes, chunks);
  }

  static void reportResources(RdmaProvider provider, ResourceCounts before, boolean verbose,
      PrintStream out) {
    printResources(provider.liveResources().minus(before), verbose, out);
  }

  static void printResources(ResourceCounts leaked, boolean verbose, PrintStream out) {
    if (!verbose) return;
    boolean none = leaked.equals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0));
    out.println("resources    " + (none ? "all closed" : "LEFT OPEN: " + leaked));
  }

  static String format(InetSocketAddress a) {
    String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
    return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
  }
}
