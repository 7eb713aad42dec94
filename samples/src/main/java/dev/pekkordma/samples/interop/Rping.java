package dev.pekkordma.samples.interop;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.SampleCommandLine;
import dev.pekkordma.samples.SharedOptions;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * rping: librdmacm's rping on the pekko-rdma connection manager, so that it pings with the real
 * tool in either role. The server RDMA READs each ping from the client and RDMA WRITEs it back.
 *
 * <p>Exit codes: 0 when the pings completed (and validated with -V), 1 when they failed, 2 for
 * bad command-line input.
 */
@Command(name = "pekko-rdma rping",
    description = {"librdmacm's rping over the pekko-rdma connection manager: per ping the client"
        + " advertises a buffer, the server RDMA READs it, the client advertises another, the"
        + " server RDMA WRITEs the ping there."},
    footer = {"", "Examples (Soft-RoCE VM, against the real tool):",
        "  rping -s -a 192.0.2.1 -C 5 &   pekko-rdma rping --provider native -c -a 192.0.2.1 -I 192.0.2.2 -C 5 -V -v",
        "  pekko-rdma rping --provider native -s -a 192.0.2.1 -C 5 -V &   rping -c -a 192.0.2.1 -I 192.0.2.2 -C 5 -V -v",
        "On the software provider: pekko-rdma rping -s -a 127.0.0.1 -C 5 &   pekko-rdma rping -c -a 127.0.0.1 -C 5 -V"})
public final class Rping implements Callable<Integer>, SampleCommandLine.Verbose {
  @Option(names = "-s", description = "Server side.")
  boolean server;

  // not picocli's standard help options: their -V is rping's verify
  @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help and exit.")
  boolean help;

  @Option(names = "--version", versionHelp = true, description = "Print the version and exit.")
  boolean version;

  @Option(names = "-c", description = "Client side.")
  boolean client;

  @Option(names = "-a", paramLabel = "ADDR",
      description = "Server: address to bind (default: any); client: the server's address.")
  String address;

  @Option(names = "-I", paramLabel = "ADDR", description = "Client: source address to bind to.")
  String source;

  @Option(names = "-p", paramLabel = "PORT", defaultValue = "7174",
      description = "Port (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "-C", paramLabel = "COUNT", defaultValue = "0",
      description = "Client: ping this many times (default: 0, until stopped). Server: fail"
          + " unless the client pinged exactly this many times (0: any; rping's server ignores"
          + " it).")
  int count;

  @Option(names = "-S", paramLabel = "SIZE", defaultValue = "64",
      description = "Ping data size, 26 to 65535 (default: ${DEFAULT-VALUE}).")
  int size;

  @Option(names = "-v", description = "Display ping data.")
  boolean verbose;

  @Option(names = "-V",
      description = "Validate ping data: the client compares what came back with what it sent;"
          + " the server checks each ping is rping's pattern for its number.")
  boolean validate;

  @Mixin SharedOptions.ProviderChoice provider;

  @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60",
      description = "Give up after this long waiting for the peer (default: ${DEFAULT-VALUE}).")
  int timeoutSeconds;

  @Option(names = "--stats",
      description = "Also print heap bytes the ping loop allocated and resources left open.")
  boolean stats;

  private final PrintStream out;

  Rping(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.exit(execute(args, System.out, System.err));
  }

  /** Runs the command line and returns the exit code. */
  public static int execute(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, RcPingPong::describe, new Rping(out));
  }

  /** Stack traces come with --stats: rping's -v is for the ping data. */
  @Override
  public boolean verbose() {
    return stats;
  }

  RpingSession.RpingSettings settings() {
    if (server == client) throw new BadOption("give one of -s (server) and -c (client)");
    if (client && address == null) throw new BadOption("the client needs -a: the server's address");
    if (server && source != null) throw new BadOption("-I is the client's source address");
    if (port < 0 || port > 65535) throw new BadOption("-p must be in [0, 65535], was " + port);
    if (size < RpingData.MIN_SIZE || size > RpingData.MAX_SIZE) {
      throw new BadOption("Invalid size " + size + " (valid range is " + RpingData.MIN_SIZE
          + " to " + RpingData.MAX_SIZE + ")");
    }
    if (count < 0) throw new BadOption("Invalid count " + count);
    if (timeoutSeconds <= 0) throw new BadOption("--timeout must be positive, was " + timeoutSeconds);
    provider.check();
    return new RpingSession.RpingSettings(size, count, verbose, validate,
        Duration.ofSeconds(timeoutSeconds));
  }

  @Override
  public Integer call() {
    RpingSession.RpingSettings s = settings();
    InetAddress a = address == null ? null : SampleCommandLine.resolve(address, "-a");
    InetSocketAddress from = source == null ? null
        : new InetSocketAddress(SampleCommandLine.resolve(source, "-I"), 0);
    try (RdmaProvider p = provider.load()) {
      if (!p.supports(RdmaProvider.Feature.CONNECTION_MANAGER)) {
        throw new PingPongFailure("the " + p.name() + " provider has no connection manager");
      }
      ResourceCounts before = p.liveResources();
      RpingSession.RpingResult r;
      if (server) {
        InetSocketAddress bind = a == null ? new InetSocketAddress(port) : new InetSocketAddress(a, port);
        try (RpingSession.RpingServer srv = RpingSession.RpingServer.listen(p, bind)) {
          out.println("server: listening on " + srv.localAddress() + " (" + p.name() + " provider)");
          out.flush();
          r = srv.serveOne(s, s.timeout(), out);
        }
        RpingSession.printSummary("server", r, s, out);
      } else {
        r = RpingSession.client(p, new InetSocketAddress(a, port), from, s, out);
        RpingSession.printSummary("client", r, s, out);
      }
      if (stats) {
        if (r.loopAllocatedBytes() >= 0) {
          out.printf(Locale.ROOT, "allocations  ping loop: %d bytes on the heap for %d pings%n",
              r.loopAllocatedBytes(), r.pings());
        }
        ResourceCounts left = p.liveResources().minus(before);
        out.println("resources    " + (left.equals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0))
            ? "all closed" : "LEFT OPEN: " + left));
      }
      return 0;
    }
  }
}
