package dev.pekkordma.samples.interop;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.SampleCommandLine;
import dev.pekkordma.samples.SharedOptions;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * rc-pingpong: {@code ibv_rc_pingpong}'s protocol on the pekko-rdma verbs API, so that it pings
 * with the real tool in either role. Without HOST it is the server; with HOST, the client.
 *
 * <p>Exit codes: 0 when every exchange completed (and with -c the data was what a -c client
 * sends), 1 when it failed, 2 for bad command-line input.
 */
@Command(name = "pekko-rdma pingpong", mixinStandardHelpOptions = true,
    description = {"ibv_rc_pingpong's ping-pong of SENDs over an RC QP connected by hand: the"
        + " addresses (LID, QPN, PSN, GID) go over TCP, the QP goes RESET -> INIT -> RTR -> RTS.",
        "Without HOST: wait for a client on the TCP port; with HOST: connect to the server there."},
    footer = {"", "Examples (Soft-RoCE VM, against the real tool):",
        "  ibv_rc_pingpong -d rxe_lo -g 1 &   pekko-rdma pingpong --provider native -d rxe_lo -g 1 127.0.0.1",
        "  pekko-rdma pingpong --provider native -d rxe_lo -g 1 &   ibv_rc_pingpong -d rxe_lo -g 1 127.0.0.1",
        "On the software provider: pekko-rdma pingpong -g 0 &   pekko-rdma pingpong -g 0 127.0.0.1"})
public final class RcPingPong implements Callable<Integer>, SampleCommandLine.Verbose {
  static final int DEFAULT_PORT = 18515;

  @Parameters(index = "0", arity = "0..1", paramLabel = "HOST",
      description = "The server to connect to; without it, be the server.")
  String host;

  @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "18515",
      description = "TCP port to listen on or connect to (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(names = {"-d", "--ib-dev"}, paramLabel = "DEV",
      description = "RDMA device (default: the provider's first).")
  String device;

  @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", defaultValue = "1",
      description = "Port of the device (default: ${DEFAULT-VALUE}).")
  int ibPort;

  @Option(names = {"-s", "--size"}, paramLabel = "BYTES", defaultValue = "4096",
      description = "Size of each message (default: ${DEFAULT-VALUE}).")
  int size;

  @Option(names = {"-m", "--mtu"}, paramLabel = "BYTES", defaultValue = "1024",
      description = "Path MTU: 256, 512, 1024, 2048 or 4096 (default: ${DEFAULT-VALUE}).")
  int mtu;

  @Option(names = {"-r", "--rx-depth"}, paramLabel = "N", defaultValue = "500",
      description = "Receives kept posted (default: ${DEFAULT-VALUE}).")
  int rxDepth;

  @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "1000",
      description = "Exchanges (default: ${DEFAULT-VALUE}).")
  int iters;

  @Option(names = {"-l", "--sl"}, paramLabel = "SL", defaultValue = "0",
      description = "Service level (default: ${DEFAULT-VALUE}).")
  int sl;

  @Option(names = {"-g", "--gid-idx"}, paramLabel = "N", defaultValue = "-1",
      description = "Local GID index; needed on Ethernet (RoCE) ports, where QPs route by GID"
          + " (default: none, route by LID).")
  int gidIndex;

  @Option(names = {"-c", "--chk"},
      description = "Validate the data: the client zeroes the first byte of each 4 KiB page;"
          + " at the end each side checks what it received.")
  boolean check;

  @Option(names = {"-e", "--events"},
      description = "Sleep on CQ events (default: poll, as ibv_rc_pingpong).")
  boolean events;

  @Mixin SharedOptions.ProviderChoice provider;

  @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60",
      description = "Give up after this long waiting for the peer or a completion"
          + " (default: ${DEFAULT-VALUE}).")
  int timeoutSeconds;

  @Option(names = "--retry-connect", paramLabel = "SECONDS", defaultValue = "0",
      description = "Client: keep trying this long while nobody listens on the server's port"
          + " (default: ${DEFAULT-VALUE}, one attempt as ibv_rc_pingpong).")
  int retrySeconds;

  @Option(names = {"-v", "--verbose"},
      description = "Say more: heap bytes the loop allocated, resources left open.")
  boolean verbose;

  private final PrintStream out;

  RcPingPong(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.exit(execute(args, System.out, System.err));
  }

  /** Runs the command line and returns the exit code. */
  public static int execute(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, RcPingPong::describe, new RcPingPong(out));
  }

  static String describe(Throwable e) {
    if (e instanceof PingPongFailure || e instanceof RdmaException) return e.getMessage();
    return SampleCommandLine.withClassName(e);
  }

  @Override
  public boolean verbose() {
    return verbose;
  }

  PingPong.PingPongSettings settings() {
    if (port < 0 || port > 65535) throw new BadOption("-p/--port must be in [0, 65535], was " + port);
    if (ibPort < 1 || ibPort > 255) throw new BadOption("-i/--ib-port must be in [1, 255], was " + ibPort);
    if (size < 1) throw new BadOption("-s/--size must be positive, was " + size);
    Mtu m = null;
    for (Mtu candidate : Mtu.values()) if (candidate.bytes == mtu) m = candidate;
    if (m == null) throw new BadOption("-m/--mtu must be 256, 512, 1024, 2048 or 4096, was " + mtu);
    if (rxDepth < 2 || rxDepth > 16384) {
      throw new BadOption("-r/--rx-depth must be in [2, 16384], was " + rxDepth);
    }
    if (iters < 1) throw new BadOption("-n/--iters must be positive, was " + iters);
    if (sl < 0 || sl > 15) throw new BadOption("-l/--sl must be in [0, 15], was " + sl);
    if (gidIndex < -1 || gidIndex > 255) {
      throw new BadOption("-g/--gid-idx must be in [0, 255] (or -1: none), was " + gidIndex);
    }
    if (timeoutSeconds <= 0) throw new BadOption("--timeout must be positive, was " + timeoutSeconds);
    if (retrySeconds < 0) throw new BadOption("--retry-connect must not be negative, was " + retrySeconds);
    provider.check();
    return new PingPong.PingPongSettings(
        device,
        ibPort,
        gidIndex,
        size,
        m,
        rxDepth,
        iters,
        sl,
        check,
        events,
        Duration.ofSeconds(timeoutSeconds));
  }

  @Override
  public Integer call() {
    PingPong.PingPongSettings s = settings();
    InetSocketAddress server = null;
    if (host != null) {
      server = new InetSocketAddress(host, port);
      if (server.isUnresolved()) throw new BadOption("HOST: unknown host '" + host + "'");
    }
    try (RdmaProvider p = provider.load()) {
      ResourceCounts before = p.liveResources();
      PingPong.PingPongResult r;
      if (server == null) {
        try (ServerSocket listener = new ServerSocket(port)) {
          r = PingPong.serve(p, s, listener, out);
        } catch (IOException e) {
          throw new PingPongFailure("couldn't listen on TCP port " + port + ": " + e.getMessage(), e);
        }
      } else {
        r = PingPong.connect(p, s, server, Duration.ofSeconds(retrySeconds), out);
      }
      PingPong.printSummary(r, out);
      if (verbose) {
        if (r.loopAllocatedBytes() >= 0) {
          out.printf(Locale.ROOT, "allocations  ping-pong loop: %d bytes on the heap for %d"
              + " iterations%n", r.loopAllocatedBytes(), r.iters());
        }
        ResourceCounts left = p.liveResources().minus(before);
        out.println("resources    " + (left.equals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0))
            ? "all closed" : "LEFT OPEN: " + left));
      }
      return r.dataOk() ? 0 : 1;
    }
  }
}
