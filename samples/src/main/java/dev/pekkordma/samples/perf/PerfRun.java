package dev.pekkordma.samples.perf;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.CmEvents;
import dev.pekkordma.samples.TransferFailure;
import dev.pekkordma.samples.BulkWire;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The three ways to run a test: both sides in this JVM with QPs connected by hand (any device,
 * any GID index: what works on Soft-RoCE's loopback device, where rdma_cm does not), or a server
 * and a client connected through the RDMA connection manager. The client's side measures and
 * prints; the server's follows the client's request.
 */
public final class PerfRun {
  private static final int QP_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
  private static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration EVENT_TIMEOUT = Duration.ofSeconds(10);
  /** Bytes before the request in the connect's private data: the client's buffer. */
  private static final int CLIENT_BUFFER = 12;
  /** Most outstanding RDMA reads and atomics asked for. */
  private static final int RD_ATOMIC = 16;

  private PerfRun() {}

  /** How and where to run. {@code device} null: the first device. */
  /** {@code gbits}: bandwidth in Gb/s (perftest's --report_gbits), else MB/s. */
  public record Settings(PerfSpec spec, String device, int port, int gidIndex, Duration timeout,
      boolean gbits) {
    public Settings(PerfSpec spec, String device, int port, int gidIndex, Duration timeout) {
      this(spec, device, port, gidIndex, timeout, false);
    }
  }

  /** What a run measured, and what it left behind. */
  public record Outcome(List<BwResult> bandwidth, List<LatResult> latency,
      long clientLoopAllocatedBytes, long serverLoopAllocatedBytes, long requests,
      long serverRequests, ResourceCounts leaked) {}

  /** Both sides in this JVM: the answering side on a thread of its own. */
  public static Outcome inProcess(RdmaProvider provider, Settings s, PrintStream out) {
    ResourceCounts before = provider.liveResources();
    RdmaDevice device = pickDevice(provider, s.device());
    PerfSpec spec = s.spec();
    Results results = new Results(out, s.gbits());
    long[] serverAllocated = {-1, 0};
    Initiator initiator;
    try (DeviceContext serverCtx = provider.open(device);
        DeviceContext clientCtx = provider.open(device)) {
      PortAttributes portAttrs = checkPort(clientCtx, s.port());
      Gid gid = checkGid(clientCtx, s.port(), s.gidIndex(), portAttrs);
      try (PerfSide server = new PerfSide(serverCtx, s.port(), spec);
          PerfSide client = new PerfSide(clientCtx, s.port(), spec)) {
        QueuePair sqp = server.pd.createQp(server.qpAttributes());
        server.adopt(sqp, sqp::close);
        QueuePair cqp = client.pd.createQp(client.qpAttributes());
        client.adopt(cqp, cqp::close);
        // random first PSNs, as perftest picks them (lrand48 & 0xffffff)
        int serverPsn = java.util.concurrent.ThreadLocalRandom.current().nextInt(1 << 24);
        int clientPsn = java.util.concurrent.ThreadLocalRandom.current().nextInt(1 << 24);
        connectByHand(server, sqp, gid, cqp.qpNum(), clientPsn, serverPsn, s, portAttrs);
        connectByHand(client, cqp, gid, sqp.qpNum(), serverPsn, clientPsn, s, portAttrs);
        server.remote = client.local();
        client.remote = server.local();
        server.postAllReceives();
        client.postAllReceives();
        Banner.print(out, provider, device.name(), s, portAttrs, gid,
            "in-process: server and client in this JVM, QPs connected by hand (no CM)",
            client, cqp, sqp);
        AtomicReference<Throwable> serverFailure = new AtomicReference<>();
        AtomicReference<Throwable> clientFailure = new AtomicReference<>();
        Thread serverThread = new Thread(() -> {
          try {
            PerfResponder r = new PerfResponder(server,
                new Idle(s.timeout().toNanos(), () -> clientFailure.get() != null));
            r.run();
            serverAllocated[0] = r.loopAllocatedBytes();
            serverAllocated[1] = r.requests();
          } catch (Throwable e) {
            serverFailure.set(e);
          }
        }, "rdma-perf-server");
        serverThread.setDaemon(true);
        serverThread.start();
        initiator = new Initiator(client,
            new Idle(s.timeout().toNanos(), () -> serverFailure.get() != null));
        try {
          results.header(spec);
          initiator.run(results);
          results.footer();
        } catch (RuntimeException e) {
          clientFailure.set(e);
          join(serverThread, s.timeout());
          Throwable sf = serverFailure.get();
          boolean consequence = sf instanceof PerfFailure && ((PerfFailure) sf).peerGone();
          if (sf != null && !consequence) {
            PerfFailure f = new PerfFailure("server side: " + sf.getMessage(), sf);
            f.addSuppressed(e);
            throw f;
          }
          throw e;
        }
        join(serverThread, s.timeout());
        Throwable sf = serverFailure.get();
        if (sf != null) throw new PerfFailure("server side: " + sf.getMessage(), sf);
      }
    }
    return new Outcome(results.bw, results.lat, initiator.loopAllocatedBytes(), serverAllocated[0],
        initiator.requests(), serverAllocated[1], provider.liveResources().minus(before));
  }

  /** The client: connects to {@code server} through the CM, measures, prints, disconnects. */
  public static Outcome client(RdmaProvider provider, Settings s, InetSocketAddress server,
      InetSocketAddress source, PrintStream out) {
    ResourceCounts before = provider.liveResources();
    PerfSpec spec = s.spec();
    Results results = new Results(out, s.gbits());
    Initiator initiator;
    CmEventChannel channel = provider.createCmEventChannel();
    try {
      CmId id = channel.createId("rdma-perf-client");
      boolean connected = false;
      try {
        id.resolveAddress(source, server, RESOLVE_TIMEOUT);
        CmEvents.expect(channel, CmEventType.ADDR_RESOLVED, EVENT_TIMEOUT, "resolving " + server);
        id.resolveRoute(RESOLVE_TIMEOUT);
        CmEvents.expect(channel, CmEventType.ROUTE_RESOLVED, EVENT_TIMEOUT,
            "resolving the route to " + server);
        DeviceContext ctx = id.verbs();
        PortAttributes portAttrs = ctx.queryPort(id.portNum());
        try (PerfSide side = new PerfSide(ctx, id.portNum(), spec)) {
          side.adopt(id.createQp(side.pd, side.qpAttributes()), id::destroyQp);
          side.postAllReceives();
          PerfSide.RemoteBuffer mine = side.local();
          byte[] request = spec.encode();
          ByteBuffer hello = ByteBuffer.allocate(CLIENT_BUFFER + request.length)
              .order(ByteOrder.BIG_ENDIAN).putLong(mine.address()).putInt(mine.rkey()).put(request);
          id.connect(parameters(ctx, hello.array()));
          CmEvent ev = CmEvents.expect(channel, CmEventType.ESTABLISHED, EVENT_TIMEOUT,
              "connecting to " + server);
          connected = true;
          side.remote = PerfSide.RemoteBuffer.decode(ev.privateData());
          Banner.print(out, provider, ctx.device().name(), s, portAttrs, null,
              "rdma_cm: client " + id.localAddress() + " to server " + id.remoteAddress(),
              side, side.qp, null);
          initiator = new Initiator(side, new Idle(s.timeout().toNanos(),
              new DisconnectWatch(channel)));
          results.header(spec);
          initiator.run(results);
          results.footer();
          id.disconnect();
          connected = false;
          CmEvents.next(channel, Duration.ofSeconds(2), () -> false); // our DISCONNECTED
        } finally {
          if (connected) {
            try {
              id.disconnect();
            } catch (RuntimeException ignored) {
              // already going down
            }
          }
        }
      } finally {
        id.close();
      }
    } catch (TransferFailure e) {
      throw new PerfFailure(e.getMessage(), e);
    } finally {
      channel.close();
    }
    return new Outcome(results.bw, results.lat, initiator.loopAllocatedBytes(), -1,
        initiator.requests(), 0, provider.liveResources().minus(before));
  }

  /** What a server did for its one client. */
  public record ServerOutcome(PerfSpec spec, String peer, long loopAllocatedBytes,
      long requests, ResourceCounts leaked) {}

  /**
   * The server: listens on {@code bind}, tells {@code listening} where, serves one client's
   * request and returns once the client has disconnected.
   */
  public static ServerOutcome serve(RdmaProvider provider, InetSocketAddress bind,
      Duration acceptTimeout, Duration timeout, PrintStream out,
      Consumer<InetSocketAddress> listening, BooleanSupplier stop) {
    ResourceCounts before = provider.liveResources();
    ServerOutcome o;
    CmEventChannel channel = provider.createCmEventChannel();
    try {
      CmId listener = channel.createId("rdma-perf-server");
      try {
        listener.bind(bind);
        listener.listen(1);
        listening.accept(listener.localAddress());
        CmEvent request = null;
        long deadline = System.nanoTime() + acceptTimeout.toNanos();
        while (request == null) {
          long left = deadline - System.nanoTime();
          CmEvent ev = left <= 0 ? null : CmEvents.next(channel, Duration.ofNanos(left), stop);
          if (ev == null) {
            throw new PerfFailure(stop.getAsBoolean() ? "server stopped before a client came"
                : "no client came within " + acceptTimeout.toSeconds() + " s");
          }
          if (ev.type() == CmEventType.CONNECT_REQUEST) request = ev;
        }
        CmId id = request.id();
        try {
          o = serveOne(channel, id, request.privateData(), timeout, out);
        } finally {
          id.close();
        }
      } finally {
        listener.close();
      }
    } catch (TransferFailure e) {
      throw new PerfFailure(e.getMessage(), e);
    } finally {
      channel.close();
    }
    return new ServerOutcome(o.spec(), o.peer(), o.loopAllocatedBytes(), o.requests(),
        provider.liveResources().minus(before));
  }

  private static ServerOutcome serveOne(CmEventChannel channel, CmId id, byte[] hello,
      Duration timeout, PrintStream out) {
    PerfSpec spec;
    PerfSide.RemoteBuffer clientBuffer;
    try {
      if (hello == null || hello.length < CLIENT_BUFFER) {
        throw new PerfFailure("the client sent " + (hello == null ? 0 : hello.length)
            + " bytes of private data: not an rdma-perf client");
      }
      ByteBuffer b = ByteBuffer.wrap(hello).order(ByteOrder.BIG_ENDIAN);
      long address = b.getLong();
      int rkey = b.getInt();
      byte[] rest = new byte[hello.length - CLIENT_BUFFER];
      b.get(rest);
      spec = PerfSpec.decode(rest);
      clientBuffer = new PerfSide.RemoteBuffer(address, rkey, 0);
    } catch (PerfFailure e) {
      id.reject(BulkWire.encodeReject(e.getMessage()));
      throw new PerfFailure("rejected a client: " + e.getMessage(), e);
    }
    DeviceContext ctx = id.verbs();
    PerfSide side;
    try {
      side = new PerfSide(ctx, id.portNum(), spec);
    } catch (RuntimeException e) {
      id.reject(BulkWire.encodeReject(e.getMessage()));
      throw e;
    }
    String peer = String.valueOf(id.remoteAddress());
    boolean connected = false;
    try (side) {
      side.adopt(id.createQp(side.pd, side.qpAttributes()), id::destroyQp);
      side.remote = clientBuffer;
      side.postAllReceives();
      id.accept(parameters(ctx, side.local().encode()));
      CmEvents.expect(channel, CmEventType.ESTABLISHED, EVENT_TIMEOUT, "accepting " + peer);
      connected = true;
      out.println("server: " + spec.test().label() + " for " + peer + ": " + spec);
      DisconnectWatch watch = new DisconnectWatch(channel);
      PerfResponder r = new PerfResponder(side, new Idle(timeout.toNanos(), watch));
      r.run();
      if (!watch.seen() && !watch.await(timeout)) {
        throw new PerfFailure("the client did not disconnect within " + timeout.toSeconds() + " s");
      }
      connected = false;
      return new ServerOutcome(spec, peer, r.loopAllocatedBytes(), r.requests(), null);
    } finally {
      if (connected) {
        try {
          id.disconnect();
        } catch (RuntimeException ignored) {
          // going down anyway
        }
      }
    }
  }

  private static ConnectionParameters parameters(DeviceContext ctx, byte[] privateData) {
    DeviceAttributes dev = ctx.queryDevice();
    return new ConnectionParameters(privateData, Math.min(RD_ATOMIC, dev.maxQpRdAtom()),
        Math.min(RD_ATOMIC, dev.maxQpInitRdAtom()), 7, 7);
  }

  /** The encoded request plus the client's buffer fits a connect request. */
  static int connectRequestLength(int[] sizes) {
    return CLIENT_BUFFER + PerfSpec.encodedLength(sizes);
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

  private static PortAttributes checkPort(DeviceContext ctx, int port) {
    int ports = ctx.queryDevice().physPortCnt();
    if (port < 1 || port > ports) {
      throw new BadOption("--ib-port " + port + ": " + ctx.device().name() + " has "
          + ports + " port(s)");
    }
    return ctx.queryPort(port);
  }

  private static Gid checkGid(DeviceContext ctx, int port, int index, PortAttributes attrs) {
    if (index < 0 || index >= attrs.gidTableLength()) {
      throw new BadOption("--gid-index " + index + ": port " + port + " of "
          + ctx.device().name() + " has " + attrs.gidTableLength() + " GID(s)");
    }
    Gid gid = ctx.queryGid(port, index);
    if (gid.isZero()) {
      throw new BadOption("--gid-index " + index + ": entry " + index + " of port "
          + port + " of " + ctx.device().name() + " is empty");
    }
    return gid;
  }

  private static void connectByHand(PerfSide side, QueuePair qp, Gid peerGid, int peerQpn,
      int peerPsn, int psn, Settings s, PortAttributes port) {
    DeviceAttributes dev = side.ctx.queryDevice();
    qp.modify(QpAttributes.toInit(s.port(), QP_ACCESS));
    qp.modify(QpAttributes.toRtr(AddressVector.global(peerGid, s.gidIndex(), s.port()), peerQpn,
        peerPsn, port.activeMtu()).maxDestRdAtomic(Math.min(RD_ATOMIC, dev.maxQpRdAtom())));
    qp.modify(QpAttributes.toRts(psn).maxRdAtomic(Math.min(RD_ATOMIC, dev.maxQpInitRdAtom())));
  }

  private static void join(Thread t, Duration timeout) {
    try {
      t.join(timeout.toMillis() + 5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) throw new PerfFailure("the server side did not stop");
  }

  /** Prints result lines as they come and keeps them. */
  private static final class Results implements Initiator.Lines {
    final List<BwResult> bw = new ArrayList<>();
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
    public void bandwidth(BwResult r) {
      bw.add(r);
      out.println(r.line(gbits));
      out.flush();
    }

    @Override
    public void latency(LatResult r) {
      lat.add(r);
      out.println(r.line());
      out.flush();
    }
  }

  /**
   * True once a DISCONNECTED came and then a whole idle period passed: completions that were
   * made before the peer went are still taken.
   */
  static final class DisconnectWatch implements BooleanSupplier {
    private final CmEventChannel channel;
    private boolean seen;

    DisconnectWatch(CmEventChannel channel) {
      this.channel = channel;
    }

    boolean seen() {
      return seen;
    }

    @Override
    public boolean getAsBoolean() {
      if (seen) return true;
      CmEvent ev = channel.awaitEvent(Duration.ZERO);
      if (ev != null && ev.type() == CmEventType.DISCONNECTED) seen = true;
      return false;
    }

    /** Waits for the peer's DISCONNECTED. */
    boolean await(Duration timeout) {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (!seen) {
        long left = deadline - System.nanoTime();
        if (left <= 0) return false;
        CmEvent ev = channel.awaitEvent(Duration.ofNanos(Math.min(left,
            TimeUnit.MILLISECONDS.toNanos(100))));
        if (ev != null && ev.type() == CmEventType.DISCONNECTED) seen = true;
      }
      return true;
    }
  }
}
