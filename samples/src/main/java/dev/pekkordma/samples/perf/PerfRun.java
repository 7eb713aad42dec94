package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The three ways to run a test: both sides in this JVM with QPs connected by hand ({@link
 * LocalRun}: any device, any GID index, any transport: what works on Soft-RoCE's loopback
 * device, where rdma_cm does not), or a server and a client connected through the RDMA
 * connection manager ({@link CmRun}). The client's side measures and prints; the server's
 * follows the client's request.
 */
public final class PerfRun {
  private PerfRun() {}

  /**
   * How and where to run. {@code device} null: the first device. {@code gbits}: bandwidth in
   * Gb/s (perftest's --report_gbits), else MB/s.
   */
  public record PerfSettings(PerfSpec spec, String device, int port, int gidIndex, Duration timeout,
      boolean gbits) {
    public PerfSettings(PerfSpec spec, String device, int port, int gidIndex, Duration timeout) {
      this(spec, device, port, gidIndex, timeout, false);
    }

    PerfSettings with(PerfSpec s) {
      return new PerfSettings(s, device, port, gidIndex, timeout, gbits);
    }
  }

  /**
   * What a run measured, and what it left behind. {@code bandwidth}: the lines printed (a
   * bidirectional run's add both directions); {@code peerBandwidth}: the peer's share of them
   * (bidirectional runs, else empty).
   */
  public record Outcome(PerfSpec spec, List<BwResult> bandwidth, List<BwResult> peerBandwidth,
      List<LatResult> latency, long clientLoopAllocatedBytes, long serverLoopAllocatedBytes,
      long requests, long serverRequests, ResourceCounts leaked) {}

  /** What a server did for its one client. */
  public record ServerOutcome(PerfSpec spec, String peer, long loopAllocatedBytes,
      long requests, ResourceCounts leaked) {}

  /** Both sides in this JVM: the answering side on a thread of its own. */
  public static Outcome inProcess(RdmaProvider provider, PerfSettings s, PrintStream out) {
    return LocalRun.run(provider, s, out);
  }

  /** The client: connects to {@code server} through the CM, measures, prints, disconnects. */
  public static Outcome client(RdmaProvider provider, PerfSettings s, InetSocketAddress server,
      InetSocketAddress source, PrintStream out) {
    return CmRun.client(provider, s, server, source, out);
  }

  /**
   * The server: listens on {@code bind}, tells {@code listening} where, serves one client's
   * request and returns once the client has disconnected.
   */
  public static ServerOutcome serve(RdmaProvider provider, InetSocketAddress bind,
      Duration acceptTimeout, Duration timeout, PrintStream out,
      Consumer<InetSocketAddress> listening, BooleanSupplier stop) {
    return CmRun.serve(provider, bind, acceptTimeout, timeout, out, listening, stop);
  }

  /** The encoded request plus the client's buffer fits a connect request. */
  static int connectRequestLength(int[] sizes) {
    return CmRun.CLIENT_BUFFER + PerfSpec.encodedLength(sizes);
  }

  static RdmaDevice pickDevice(RdmaProvider provider, String name) {
    List<RdmaDevice> devices = provider.devices();
    if (devices.isEmpty()) {
      throw new PerfFailure("the " + provider.name() + " provider has no device");
    }
    if (name == null) return devices.get(0);
    for (RdmaDevice d : devices) if (d.name().equals(name)) return d;
    List<String> names = new ArrayList<>();
    for (RdmaDevice d : devices) names.add(d.name());
    throw new BadOption("--ib-dev: no device named '" + name + "' on the "
        + provider.name() + " provider; devices: " + String.join(", ", names));
  }

  /** Prints result lines as they come and keeps them. */
  static final class Results implements Initiator.Lines {
    final List<BwResult> bw = new ArrayList<>();
    final List<BwResult> peerBw = new ArrayList<>();
    final List<LatResult> lat = new ArrayList<>();
    private final PrintStream out;
    private final boolean gbits;

    Results(PrintStream out, boolean gbits) {
      this.out = out;
      this.gbits = gbits;
    }

    void header(PerfSpec spec) {
      out.println(spec.test().bandwidth() ? BwResult.header(gbits) : LatResult.HEADER);
      out.flush();
    }

    void footer() {
      out.println(Banner.RULE);
      out.flush();
    }

    @Override
    public void bandwidth(BwResult r, BwResult peer) {
      bw.add(r);
      if (peer != null) peerBw.add(peer);
      out.println(r.line(gbits));
      out.flush();
    }

    @Override
    public void latency(LatResult r) {
      lat.add(r);
      out.println(r.line());
      out.flush();
    }

    Outcome outcome(PerfSpec spec, Initiator initiator, long serverAllocated,
        long serverRequests, ResourceCounts leaked) {
      return new Outcome(spec, bw, peerBw, lat, initiator.loopAllocatedBytes(), serverAllocated,
          initiator.requests(), serverRequests, leaked);
    }
  }
}
