package dev.pekkordma.samples.perf;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.BulkWire;
import dev.pekkordma.samples.CmEvents;
import dev.pekkordma.samples.TransferFailure;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.QpType;
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
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A server and a client connected through rdma_cm, one CM id and RC QP per {@code --qp}, as
 * perftest's -R: the first connect request carries the client's buffer and the test, the
 * others their QP's index. The sides talk between bandwidth runs through the first QP ({@link
 * PeerLink.WireLink}).
 */
final class CmRun {
  private static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration EVENT_TIMEOUT = Duration.ofSeconds(10);
  /** Bytes before the request in the connect's private data: the client's buffer. */
  static final int CLIENT_BUFFER = 12;
  /** The private data of the connect requests after the first: magic, version, mark, index. */
  private static final int MORE = 0xff;

  private CmRun() {}

  /** rdma_cm connects RC QPs here (the software CM refuses UD ids, as librdmacm refuses UC). */
  static void requireRc(QpType type) {
    if (type != QpType.RC) {
      throw new BadOption("-c/--connection " + type + ": rdma_cm connects RC QPs here (as"
          + " perftest, no UC through librdmacm; UD would need its datagram port space, which"
          + " this CM lacks); run UC and UD in-process (no subcommand)");
    }
  }

  static PerfRun.Outcome client(RdmaProvider provider, PerfRun.PerfSettings s,
      InetSocketAddress server, InetSocketAddress source, PrintStream out) {
    ResourceCounts before = provider.liveResources();
    PerfSpec spec = s.spec();
    requireRc(spec.connection());
    PerfRun.Results results = new PerfRun.Results(out, s.gbits());
    Initiator initiator;
    int q = spec.qps();
    CmId[] ids = new CmId[q];
    CmEventChannel channel = provider.createCmEventChannel();
    try {
      int connected = 0;
      try {
        ids[0] = resolved(channel, source, server);
        DeviceContext ctx = ids[0].verbs();
        PortAttributes portAttrs = ctx.queryPort(ids[0].portNum());
        try (PerfSide side = new PerfSide(ctx, ids[0].portNum(), spec)) {
          for (int k = 0; k < q; k++) {
            if (k > 0) ids[k] = resolved(channel, source, server);
            if (ids[k].verbs() != ctx) {
              throw new PerfFailure("rdma_cm put QP " + k + " on another device context than"
                  + " QP 0; rdma-perf's QPs share one PD and CQ");
            }
            CmId id = ids[k];
            side.adopt(k, id.createQp(side.pd, side.qpAttributes()), id::destroyQp);
          }
          side.postAllReceives();
          PerfSide.RemoteBuffer mine = side.local();
          byte[] request = spec.encode();
          for (int k = 0; k < q; k++) {
            ByteBuffer hello = k == 0
                ? ByteBuffer.allocate(CLIENT_BUFFER + request.length).order(ByteOrder.BIG_ENDIAN)
                    .putLong(mine.address()).putInt(mine.rkey()).put(request)
                : ByteBuffer.allocate(6).order(ByteOrder.BIG_ENDIAN).putShort((short) PerfSpec.MAGIC)
                    .put(PerfSpec.VERSION).put((byte) MORE).putShort((short) k);
            ids[k].connect(parameters(ctx, hello.array()));
            CmEvent ev = CmEvents.expect(channel, CmEventType.ESTABLISHED, EVENT_TIMEOUT,
                "connecting QP " + k + " to " + server);
            connected++;
            if (k == 0) side.remote = PerfSide.RemoteBuffer.decode(ev.privateData());
          }
          Banner.print(out, provider, ctx.device().name(), s, portAttrs, null,
              "rdma_cm: client " + ids[0].localAddress() + " to server " + ids[0].remoteAddress(),
              side);
          initiator = new Initiator(side, new IdleWatch(s.timeout().toNanos(),
              new DisconnectWatch(channel)), new PeerLink.WireLink(side));
          results.header(spec);
          initiator.run(results);
          results.footer();
          for (int k = 0; k < q; k++) ids[k].disconnect();
          connected = 0;
          for (int k = 0; k < q; k++) {
            CmEvents.next(channel, Duration.ofSeconds(2), () -> false); // our DISCONNECTEDs
          }
        } finally {
          for (int k = 0; k < connected; k++) {
            try {
              ids[k].disconnect();
            } catch (RuntimeException ignored) {
              // already going down
            }
          }
        }
      } finally {
        for (int k = q - 1; k >= 0; k--) if (ids[k] != null) ids[k].close();
      }
    } catch (TransferFailure e) {
      throw new PerfFailure(e.getMessage(), e);
    } finally {
      channel.close();
    }
    return results.outcome(spec, initiator, -1, 0, provider.liveResources().minus(before));
  }

  private static CmId resolved(CmEventChannel channel, InetSocketAddress source,
      InetSocketAddress server) {
    CmId id = channel.createId("rdma-perf-client");
    try {
      id.resolveAddress(source, server, RESOLVE_TIMEOUT);
      CmEvents.expect(channel, CmEventType.ADDR_RESOLVED, EVENT_TIMEOUT, "resolving " + server);
      id.resolveRoute(RESOLVE_TIMEOUT);
      CmEvents.expect(channel, CmEventType.ROUTE_RESOLVED, EVENT_TIMEOUT,
          "resolving the route to " + server);
      return id;
    } catch (RuntimeException e) {
      id.close();
      throw e;
    }
  }

  static PerfRun.ServerOutcome serve(RdmaProvider provider, InetSocketAddress bind,
      Duration acceptTimeout, Duration timeout, PrintStream out,
      Consumer<InetSocketAddress> listening, BooleanSupplier stop) {
    ResourceCounts before = provider.liveResources();
    PerfRun.ServerOutcome o;
    CmEventChannel channel = provider.createCmEventChannel();
    try {
      CmId listener = channel.createId("rdma-perf-server");
      try {
        listener.bind(bind);
        listener.listen(16);
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
        List<CmId> ids = new ArrayList<>();
        ids.add(request.id());
        try {
          o = serveOne(channel, ids, request.privateData(), timeout, out);
        } finally {
          for (int k = ids.size() - 1; k >= 0; k--) ids.get(k).close();
        }
      } finally {
        listener.close();
      }
    } catch (TransferFailure e) {
      throw new PerfFailure(e.getMessage(), e);
    } finally {
      channel.close();
    }
    return new PerfRun.ServerOutcome(o.spec(), o.peer(), o.loopAllocatedBytes(), o.requests(),
        provider.liveResources().minus(before));
  }

  /** Serves the client whose first id is {@code ids[0]}; its other ids are added to {@code ids}. */
  private static PerfRun.ServerOutcome serveOne(CmEventChannel channel, List<CmId> ids,
      byte[] hello, Duration timeout, PrintStream out) {
    CmId first = ids.get(0);
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
      if (spec.connection() != QpType.RC) {
        throw new PerfFailure("the client asks for " + spec.connection() + " QPs; rdma_cm"
            + " connects RC QPs here");
      }
      clientBuffer = new PerfSide.RemoteBuffer(address, rkey, PerfSide.bufferLength(spec));
    } catch (PerfFailure e) {
      first.reject(BulkWire.encodeReject(e.getMessage()));
      throw new PerfFailure("rejected a client: " + e.getMessage(), e);
    }
    DeviceContext ctx = first.verbs();
    PerfSide side;
    try {
      side = new PerfSide(ctx, first.portNum(), spec);
    } catch (RuntimeException e) {
      first.reject(BulkWire.encodeReject(e.getMessage()));
      throw e;
    }
    String peer = String.valueOf(first.remoteAddress());
    int connected = 0;
    try (side) {
      side.adopt(0, first.createQp(side.pd, side.qpAttributes()), first::destroyQp);
      side.remote = clientBuffer;
      side.postReceives(0); // the others' as their QPs come
      byte[] answer = side.local().encode();
      first.accept(parameters(ctx, answer));
      connected++;
      int established = 0;
      while (established < spec.qps()) {
        CmEvent ev = CmEvents.next(channel, EVENT_TIMEOUT, () -> false);
        if (ev == null) {
          throw new PerfFailure("the client connected " + established + " of its " + spec.qps()
              + " QPs within " + EVENT_TIMEOUT.toSeconds() + " s");
        }
        if (ev.type() == CmEventType.ESTABLISHED) {
          established++;
        } else if (ev.type() == CmEventType.CONNECT_REQUEST && ids.size() < spec.qps()) {
          CmId id = ev.id();
          ids.add(id);
          int k = ids.size() - 1;
          String bad = moreProblem(ev.privateData(), k, id.verbs() == ctx);
          if (bad != null) {
            id.reject(BulkWire.encodeReject(bad));
            throw new PerfFailure("rejected QP " + k + " of the client: " + bad);
          }
          side.adopt(k, id.createQp(side.pd, side.qpAttributes()), id::destroyQp);
          side.postReceives(k);
          id.accept(parameters(ctx, answer));
          connected++;
        } else {
          throw new PerfFailure("connecting the client's " + spec.qps() + " QPs: got "
              + CmEvents.describe(ev));
        }
      }
      out.println("server: " + spec.test().label() + " for " + peer + ": " + spec);
      DisconnectWatch watch = new DisconnectWatch(channel);
      PerfResponder r = new PerfResponder(side, new IdleWatch(timeout.toNanos(), watch),
          new PeerLink.WireLink(side));
      r.run();
      if (!watch.await(spec.qps(), timeout)) {
        throw new PerfFailure("the client did not disconnect within " + timeout.toSeconds() + " s");
      }
      connected = 0;
      return new PerfRun.ServerOutcome(spec, peer, r.loopAllocatedBytes(), r.requests(), null);
    } finally {
      for (int k = 0; k < connected; k++) {
        try {
          ids.get(k).disconnect();
        } catch (RuntimeException ignored) {
          // going down anyway
        }
      }
    }
  }

  /** What is wrong with connect request {@code k} after the first, or null. */
  private static String moreProblem(byte[] data, int k, boolean sameContext) {
    if (data == null || data.length < 6) return "not an rdma-perf QP request";
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
    if ((b.getShort() & 0xffff) != PerfSpec.MAGIC || b.get() != PerfSpec.VERSION
        || (b.get() & 0xff) != MORE) {
      return "not an rdma-perf QP request";
    }
    int index = b.getShort() & 0xffff;
    if (index != k) return "QP " + index + " came where QP " + k + " was due";
    if (!sameContext) return "QP " + k + " came on another device than QP 0";
    return null;
  }

  private static ConnectionParameters parameters(DeviceContext ctx, byte[] privateData) {
    DeviceAttributes dev = ctx.queryDevice();
    return new ConnectionParameters(privateData, Math.min(LocalRun.RD_ATOMIC, dev.maxQpRdAtom()),
        Math.min(LocalRun.RD_ATOMIC, dev.maxQpInitRdAtom()), 7, 7);
  }

  /**
   * True once a DISCONNECTED came and then a whole idle period passed: completions that were
   * made before the peer went are still taken.
   */
  static final class DisconnectWatch implements BooleanSupplier {
    private final CmEventChannel channel;
    private int seen;

    DisconnectWatch(CmEventChannel channel) {
      this.channel = channel;
    }

    @Override
    public boolean getAsBoolean() {
      if (seen > 0) return true;
      CmEvent ev = channel.awaitEvent(Duration.ZERO);
      if (ev != null && ev.type() == CmEventType.DISCONNECTED) seen++;
      return false;
    }

    /** Waits for {@code n} DISCONNECTEDs: one for each of the peer's QPs. */
    boolean await(int n, Duration timeout) {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (seen < n) {
        long left = deadline - System.nanoTime();
        if (left <= 0) return false;
        CmEvent ev = channel.awaitEvent(Duration.ofNanos(Math.min(left,
            TimeUnit.MILLISECONDS.toNanos(100))));
        if (ev != null && ev.type() == CmEventType.DISCONNECTED) seen++;
      }
      return true;
    }
  }
}
