package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.SampleCommandLine;
import dev.pekkordma.samples.SharedOptions;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * rdma-perf: perftest's bandwidth and latency tests on the verbs API, with perftest's output.
 * With no subcommand both sides run in this JVM over one device with QPs connected by hand;
 * {@code server} and {@code client} run them in two processes connected through rdma_cm.
 *
 * <p>Exit codes: 0 when the test ran, 1 when it failed, 2 for bad command-line input.
 */
@Command(name = "pekko-rdma perf", mixinStandardHelpOptions = true,
    description = {"perftest's bandwidth and latency tests (send, write, read) on the pekko-rdma"
        + " verbs API, printed as perftest prints them (MB = 2^20 bytes).",
        "With no subcommand both sides run in this JVM with QPs connected by hand on one device"
            + " (-d, -x: works on Soft-RoCE's loopback device, where rdma_cm does not)."},
    footer = {"", "Examples:",
        "  pekko-rdma perf write_bw -s 64k                       in-process, software provider",
        "  pekko-rdma perf send_lat -a -n 1000",
        "  pekko-rdma perf send_bw -q 4 -b -D 10                 4 QPs, both ways, 10 s per size",
        "  pekko-rdma perf send_bw -c UD -s 4k                   unreliable datagrams",
        "  pekko-rdma perf read_bw --provider native -d rxe_lo -x 1 -s 64k",
        "  pekko-rdma perf server --bind 192.0.2.1:18515 --provider native",
        "  pekko-rdma perf client --connect 192.0.2.1:18515 --source 192.0.2.2 write_bw -a"},
    subcommands = CommandLine.HelpCommand.class)
public final class RdmaPerf implements Callable<Integer> {
  static final int MAX_ITERATIONS = 10_000_000;
  static final int MAX_DEPTH = 16384;
  static final int MAX_QPS = 16384;
  static final int MAX_DURATION = 65535;
  static final long MAX_BW_SIZE = 1L << 30;
  static final long MAX_LAT_SIZE = 1L << 29;

  @Mixin PerfOptions test;
  @Mixin DeviceOptions device;
  @Mixin SharedPerfOptions common;

  private final PrintStream out;

  RdmaPerf(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.exit(execute(args, System.out, System.err));
  }

  /** Runs the command line and returns the exit code. */
  public static int execute(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, RdmaPerf::describe,
        new RdmaPerf(out), new Local(out), new PerfServerCommand(out), new PerfClientCommand(out));
  }

  static String describe(Throwable e) {
    if (e instanceof PerfFailure) return e.getMessage();
    return SampleCommandLine.withClassName(e);
  }

  @Override
  public Integer call() {
    return runLocal(test, device, common, out);
  }

  /** Which device, port and GID: the in-process run's (the CM picks them from addresses). */
  static final class DeviceOptions {
    @Option(names = {"-d", "--ib-dev"}, paramLabel = "NAME",
        description = "Device (default: the provider's first).")
    String name;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "N", defaultValue = "1",
        description = "Port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-x", "--gid-index"}, paramLabel = "N", defaultValue = "0",
        description = "GID index (default: ${DEFAULT-VALUE}; 1 on Soft-RoCE's rxe_lo).")
    int gidIndex;

    void check() {
      if (port < 1 || port > 255) throw new BadOption("-i/--ib-port must be in [1, 255], was " + port);
      if (gidIndex < 0 || gidIndex > 255) {
        throw new BadOption("-x/--gid-index must be in [0, 255], was " + gidIndex);
      }
    }
  }

  /** How to run: every command's. */
  static final class SharedPerfOptions implements SampleCommandLine.Verbose {
    @Option(names = {"-v", "--verbose"},
        description = "Say more: heap bytes the data path allocated, resources left open.")
    boolean verbose;

    @Mixin SharedOptions.ProviderChoice provider;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "30",
        description = "Give up after this long without progress (default: ${DEFAULT-VALUE}).")
    int timeoutSeconds;

    @Override
    public boolean verbose() {
      return verbose;
    }

    Duration timeout() {
      if (timeoutSeconds <= 0) {
        throw new BadOption("--timeout must be positive, was " + timeoutSeconds);
      }
      return Duration.ofSeconds(timeoutSeconds);
    }

    void checkProvider() {
      provider.check();
    }

    RdmaProvider loadProvider() {
      return provider.load();
    }
  }

  @Command(name = "local", mixinStandardHelpOptions = true,
      description = "Both sides in this JVM (the default).")
  static final class Local implements Callable<Integer> {
    @Mixin PerfOptions test;
    @Mixin DeviceOptions device;
    @Mixin SharedPerfOptions common;
    private final PrintStream out;

    Local(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() {
      return runLocal(test, device, common, out);
    }
  }

  @Command(name = "server", mixinStandardHelpOptions = true,
      description = "Waits for one client through rdma_cm, answers its test and exits.")
  static final class PerfServerCommand implements Callable<Integer> {
    @Mixin SharedOptions.Listen listen;

    @Mixin SharedPerfOptions common;
    private final PrintStream out;

    PerfServerCommand(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() {
      Duration acceptTimeout = listen.acceptTimeout();
      Duration timeout = common.timeout();
      try (RdmaProvider provider = common.loadProvider()) {
        requireCm(provider);
        PerfRun.ServerOutcome o = PerfRun.serve(provider, listen.address(), acceptTimeout,
            timeout, out, a -> {
              out.println("server: listening on " + a + " (" + provider.name() + " provider)");
              out.flush();
            }, () -> false);
        if (common.verbose) {
          printAllocations("server", o.loopAllocatedBytes(), o.requests(), out);
          printResources(o.leaked(), out);
        }
        return 0;
      }
    }
  }

  @Command(name = "client", mixinStandardHelpOptions = true,
      description = "Connects to a server through rdma_cm, runs the test and prints the results.")
  static final class PerfClientCommand implements Callable<Integer> {
    @Mixin SharedOptions.ConnectTarget connect;

    @Option(names = "--source", paramLabel = "HOST",
        description = "Local address to connect from (e.g. 192.0.2.2 in the Soft-RoCE lab).")
    String source;

    @Mixin PerfOptions test;
    @Mixin SharedPerfOptions common;
    private final PrintStream out;

    PerfClientCommand(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() {
      PerfSpec spec = test.spec();
      CmRun.requireRc(spec.connection());
      int length = PerfRun.connectRequestLength(spec.sizes());
      if (length > 56) {
        throw new BadOption("--sizes: " + spec.sizes().length + " sizes need " + length
            + " bytes of the connect request's 56: give fewer (or -a)");
      }
      InetSocketAddress from = source == null ? null
          : new InetSocketAddress(SampleCommandLine.resolve(source, "--source"), 0);
      Duration timeout = common.timeout();
      try (RdmaProvider provider = common.loadProvider()) {
        requireCm(provider);
        PerfRun.Outcome o =
            PerfRun.client(
                provider,
                new PerfRun.PerfSettings(spec, null, 1, 0, timeout, test.reportGbits),
                connect.address(),
                from,
                out);
        test.writeJson(provider.name(), o);
        if (common.verbose) {
          printAllocations("client", o.clientLoopAllocatedBytes(), o.requests(), out);
          printResources(o.leaked(), out);
        }
        return 0;
      }
    }
  }

  static int runLocal(PerfOptions test, DeviceOptions device, SharedPerfOptions common,
      PrintStream out) {
    PerfSpec spec = test.spec();
    device.check();
    Duration timeout = common.timeout();
    try (RdmaProvider provider = common.loadProvider()) {
      PerfRun.Outcome o = PerfRun.inProcess(provider, new PerfRun.PerfSettings(spec, device.name,
          device.port, device.gidIndex, timeout, test.reportGbits), out);
      test.writeJson(provider.name(), o);
      if (common.verbose) {
        printAllocations("client", o.clientLoopAllocatedBytes(), o.requests(), out);
        printAllocations("server", o.serverLoopAllocatedBytes(), o.serverRequests(), out);
        printResources(o.leaked(), out);
      }
      return 0;
    }
  }

  static void requireCm(RdmaProvider provider) {
    if (!provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER)) {
      throw new PerfFailure("the " + provider.name() + " provider has no connection manager:"
          + " server and client need one; the in-process run (no subcommand) does not");
    }
  }

  static void printAllocations(String side, long bytes, long requests, PrintStream out) {
    if (bytes < 0) return;
    out.printf(Locale.ROOT, "allocations  %s data path: %d bytes on the heap%s%n", side, bytes,
        requests < 0 ? "" : " for " + requests + " measured requests");
  }

  static void printResources(ResourceCounts leaked, PrintStream out) {
    boolean none = leaked.equals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0));
    out.println("resources    " + (none ? "all closed" : "LEFT OPEN: " + leaked));
  }
}
