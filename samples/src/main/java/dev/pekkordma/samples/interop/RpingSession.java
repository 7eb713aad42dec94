package dev.pekkordma.samples.interop;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.samples.Allocations;
import dev.pekkordma.samples.CmEvents;
import dev.pekkordma.samples.CompletionPoller;
import dev.pekkordma.samples.Resources;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;

/**
 * rping's ping loop over the connection manager. Each ping: the client advertises its start
 * buffer (a SEND of {@code rping_rdma_info}), the server RDMA READs it and answers "go ahead"
 * (a SEND), the client advertises its sink buffer, the server RDMA WRITEs the ping there and
 * says "go ahead" again. The client ends with a disconnect; the server serves until it comes.
 */
final class RpingSession {
  static final int DEFAULT_PORT = 7174;
  private static final int SQ_DEPTH = 16;
  private static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration DISCONNECT_WAIT = Duration.ofSeconds(5);
  /** How long a wait for completions lasts before the CM channel is looked at again. */
  private static final long SLICE_NANOS = 100_000_000L;
  private static final int RECV_WRID = 1;
  private static final int SEND_WRID = 2;
  private static final int RDMA_WRID = 3;

  /**
   * rping's options. {@code count} 0 pings until stopped (client) or does not check (server);
   * {@code validate} on the client compares what came back with what went out (rping's -V), on
   * the server checks each ping is rping's pattern for its number.
   */
  record RpingSettings(int size, int count, boolean verbose, boolean validate, Duration timeout) {}

  /** Pings done and how long they took; {@code loopAllocatedBytes} -1 where not counted. */
  record RpingResult(int pings, double micros, long loopAllocatedBytes) {}

  private RpingSession() {}

  /** The client: connects from {@code source} (null: any) to {@code server} and pings. */
  static RpingResult client(
      RdmaProvider provider,
      InetSocketAddress server,
      InetSocketAddress source,
      RpingSettings s,
      PrintStream out) {
    CmEventChannel channel = provider.createCmEventChannel();
    try (Resources res = new Resources()) {
      res.onClose(channel);
      CmId id = channel.createId("rping-client");
      res.onClose(id);
      id.resolveAddress(source, server, RESOLVE_TIMEOUT);
      CmEvents.expect(channel, CmEventType.ADDR_RESOLVED, s.timeout(), "resolving " + server);
      id.resolveRoute(RESOLVE_TIMEOUT);
      CmEvents.expect(channel, CmEventType.ROUTE_RESOLVED, s.timeout(),
          "resolving the route to " + server);
      RpingConnection c = new RpingConnection(channel, id, s, true, res);
      id.connect(rpingParameters());
      CmEvent ev = CmEvents.next(channel, s.timeout(), () -> false);
      if (ev == null || ev.type() != CmEventType.ESTABLISHED) {
        throw new PingPongFailure("connecting to " + server + ": "
            + (ev == null ? "no answer within " + s.timeout().toSeconds() + " s"
                : CmEvents.describe(ev)));
      }
      c.connected = true;
      return c.runClient(out);
    }
  }

  /** rping's rdma_conn_param: one outstanding RDMA READ each way, retries 7. */
  private static ConnectionParameters rpingParameters() {
    return new ConnectionParameters(new byte[0], 1, 1, 7, 7);
  }

  /** A listening server; {@link #serveOne} takes one client at a time, as rping without -P. */
  static final class RpingServer implements AutoCloseable {
    private final CmEventChannel channel;
    private final CmId listenId;

    private RpingServer(CmEventChannel channel, CmId listenId) {
      this.channel = channel;
      this.listenId = listenId;
    }

    static RpingServer listen(RdmaProvider provider, InetSocketAddress bind) {
      CmEventChannel channel = provider.createCmEventChannel();
      CmId id = null;
      try {
        id = channel.createId("rping-server");
        id.bind(bind);
        id.listen(3);
        return new RpingServer(channel, id);
      } catch (RuntimeException e) {
        try {
          if (id != null) id.close();
          channel.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    }

    InetSocketAddress localAddress() {
      return listenId.localAddress();
    }

    /** Waits for a client, answers its pings until it disconnects and returns. */
    RpingResult serveOne(RpingSettings s, Duration acceptTimeout, PrintStream out) {
      CmEvent ev = CmEvents.next(channel, acceptTimeout, () -> false);
      if (ev == null) {
        throw new PingPongFailure("no client within " + acceptTimeout.toSeconds() + " s");
      }
      if (ev.type() != CmEventType.CONNECT_REQUEST) {
        throw new PingPongFailure("waiting for a client: expected CONNECT_REQUEST, got "
            + CmEvents.describe(ev));
      }
      CmId id = ev.id();
      try (Resources res = new Resources()) {
        res.onClose(id);
        RpingConnection c = new RpingConnection(channel, id, s, false, res);
        id.accept(rpingParameters());
        CmEvents.expect(channel, CmEventType.ESTABLISHED, s.timeout(), "accepting a client");
        c.connected = true;
        RpingResult r = c.runServer(out);
        if (s.count() > 0 && r.pings() != s.count()) {
          throw new PingPongFailure("the client made " + r.pings() + " pings, not the "
              + s.count() + " of -C");
        }
        return r;
      }
    }

    @Override
    public void close() {
      try {
        listenId.close();
      } finally {
        channel.close();
      }
    }
  }

  /** One side's resources (as rping_setup_qp and rping_setup_buffers) and its loop. */
  private static final class RpingConnection {
    private final CmEventChannel channel;
    private final CmId id;
    private final RpingSettings s;
    private final CompletionPoller poller;
    private final QueuePair qp;
    private final OffHeapBuffer recvBuf;
    private final MemoryRegion recvMr;
    private final OffHeapBuffer sendBuf;
    private final MemoryRegion sendMr;
    private final OffHeapBuffer rdmaBuf;
    private final MemoryRegion rdmaMr;
    private final OffHeapBuffer startBuf;
    private final MemoryRegion startMr;
    private final RecvRequests recvs;
    private final SendRequests sends;
    boolean connected;
    private boolean flushed;

    RpingConnection(
        CmEventChannel channel, CmId id, RpingSettings s, boolean client, Resources res) {
      this.channel = channel;
      this.id = id;
      this.s = s;
      // closed first: our disconnect, while the QP still exists
      DeviceContext ctx = id.verbs();
      ProtectionDomain pd = res.add(ctx.allocPd());
      poller = res.add(new CompletionPoller(ctx, SQ_DEPTH * 2, 1, 200));
      recvBuf = res.add(OffHeapBuffer.allocate(RpingData.INFO_SIZE));
      recvMr = res.add(pd.registerMemory(recvBuf, Access.LOCAL_WRITE));
      sendBuf = res.add(OffHeapBuffer.allocate(RpingData.INFO_SIZE));
      sendMr = res.add(pd.registerMemory(sendBuf, 0));
      int remote = Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE;
      rdmaBuf = res.add(OffHeapBuffer.allocate(s.size()));
      rdmaMr = res.add(pd.registerMemory(rdmaBuf, remote));
      if (client) {
        startBuf = res.add(OffHeapBuffer.allocate(s.size()));
        startMr = res.add(pd.registerMemory(startBuf, remote));
      } else {
        startBuf = null;
        startMr = null;
      }
      recvs = res.add(new RecvRequests(1, 1));
      sends = res.add(new SendRequests(1, 1));
      qp = id.createQp(pd, QpInitAttributes.of(QpType.RC, poller.cq, poller.cq)
          .maxSendWr(SQ_DEPTH).maxRecvWr(2).maxSendSge(1).maxRecvSge(1));
      res.onClose(id::destroyQp);
      res.onClose(this::disconnect);
      postRecv();
    }

    private void postRecv() {
      recvs.clear();
      recvs.add(RECV_WRID).sge(recvMr, 0, RpingData.INFO_SIZE);
      qp.postRecv(recvs);
    }

    private void postInfo(long address, int rkey, int size) {
      RpingData.putInfo(sendBuf.address(), address, rkey, size);
      sends.clear();
      sends.add(SEND_WRID, WrOpcode.SEND, SendRequests.SIGNALED)
          .sge(sendMr, 0, RpingData.INFO_SIZE);
      qp.postSend(sends);
    }

    private void postRdma(WrOpcode op, int length, long remoteAddress, int rkey) {
      sends.clear();
      sends.add(RDMA_WRID, op, SendRequests.SIGNALED).sge(rdmaMr, 0, length)
          .rdma(remoteAddress, rkey);
      qp.postSend(sends);
    }

    /**
     * Waits for the next completion of {@code expected}, skipping SEND completions as rping does.
     * Returns false when the peer disconnected instead (its DISCONNECTED event, or our receive
     * flushed and the event followed).
     */
    private boolean await(WcOpcode expected, String doing) {
      WorkCompletions wcs = poller.wcs;
      long quietSince = System.nanoTime();
      long timeout = s.timeout().toNanos();
      while (true) {
        int n = flushed ? 0 : poller.await(SLICE_NANOS);
        if (n == 0) {
          CmEvent ev = channel.awaitEvent(flushed ? DISCONNECT_WAIT : Duration.ZERO);
          if (ev != null) {
            if (ev.type() == CmEventType.DISCONNECTED) {
              connected = false;
              return false;
            }
            throw new PingPongFailure(doing + ": unexpected " + CmEvents.describe(ev));
          }
          if (flushed) {
            throw new PingPongFailure(doing + ": our QP flushed its work and no DISCONNECTED"
                + " came in " + DISCONNECT_WAIT.toSeconds() + " s");
          }
          if (System.nanoTime() - quietSince > timeout) {
            throw new PingPongFailure(doing + ": nothing for " + s.timeout().toSeconds() + " s");
          }
          continue;
        }
        int status = wcs.statusCode(0);
        if (status == WcStatus.WR_FLUSH_ERR.code) {
          flushed = true; // the QP went to ERR: the peer's disconnect, whose event follows
          continue;
        }
        if (status != 0) {
          throw new PingPongFailure(doing + ": cq completion failed status " + wcs.status(0)
              + " (" + status + ") for " + wcs.opcode(0));
        }
        WcOpcode op = wcs.opcode(0);
        quietSince = System.nanoTime();
        if (op == WcOpcode.SEND) continue;
        if (op != expected) {
          throw new PingPongFailure(doing + ": a " + op + " completion came, expected "
              + expected);
        }
        if (op == WcOpcode.RECV) {
          if (wcs.byteLength(0) != RpingData.INFO_SIZE) {
            throw new PingPongFailure(doing + ": Received bogus data, size "
                + wcs.byteLength(0));
          }
          postRecv();
        }
        return true;
      }
    }

    RpingResult runServer(PrintStream out) {
      int pings = 0;
      long allocatedBefore = Allocations.currentThread();
      long start = System.nanoTime();
      long info = recvBuf.address();
      while (await(WcOpcode.RECV, "waiting for ping " + pings + "'s start buffer")) {
        long addr = RpingData.infoAddress(info);
        int rkey = RpingData.infoRkey(info);
        int len = RpingData.infoSize(info);
        if (len < 1 || len > s.size()) {
          throw new PingPongFailure("ping " + pings + ": the client's buffer is " + len
              + " bytes; this server's -S is " + s.size());
        }
        postRdma(WrOpcode.RDMA_READ, len, addr, rkey);
        if (!await(WcOpcode.RDMA_READ, "reading ping " + pings)) throw midPing(pings);
        if (s.verbose()) out.println("server ping data: " + RpingData.text(rdmaBuf.address(), len));
        if (s.validate()) {
          int at = RpingData.firstMismatch(rdmaBuf.address(), len, pings);
          if (at >= 0) {
            throw new PingPongFailure("ping " + pings + " is not rping's data: byte " + at
                + " differs in '" + RpingData.text(rdmaBuf.address(), len) + "'");
          }
        }
        postInfo(0, 0, 0); // "go ahead": rping's server sends its zeroed info
        if (!await(WcOpcode.RECV, "waiting for ping " + pings + "'s sink buffer")) {
          throw midPing(pings);
        }
        addr = RpingData.infoAddress(info);
        rkey = RpingData.infoRkey(info);
        int sinkLen = RpingData.infoSize(info);
        int length = RpingData.strlen(rdmaBuf.address(), len) + 1;
        if (length > len) length = len;
        if (length > sinkLen) {
          throw new PingPongFailure("ping " + pings + ": the client's sink is " + sinkLen
              + " bytes, the ping " + length);
        }
        postRdma(WrOpcode.RDMA_WRITE, length, addr, rkey);
        if (!await(WcOpcode.RDMA_WRITE, "writing ping " + pings + " back")) {
          throw midPing(pings);
        }
        postInfo(0, 0, 0);
        pings++;
      }
      return result(pings, start, allocatedBefore);
    }

    private static PingPongFailure midPing(int ping) {
      return new PingPongFailure("the client disconnected in the middle of ping " + ping);
    }

    RpingResult runClient(PrintStream out) {
      int size = s.size();
      long allocatedBefore = Allocations.currentThread();
      long start = System.nanoTime();
      int ping = 0;
      for (; s.count() == 0 || ping < s.count(); ping++) {
        RpingData.fill(startBuf.address(), size, ping);
        postInfo(startBuf.address(), startMr.rkey(), size);
        if (!await(WcOpcode.RECV, "waiting for the server to read ping " + ping)) {
          throw new PingPongFailure("the server disconnected during ping " + ping);
        }
        postInfo(rdmaBuf.address(), rdmaMr.rkey(), size);
        if (!await(WcOpcode.RECV, "waiting for the server to write ping " + ping + " back")) {
          throw new PingPongFailure("the server disconnected during ping " + ping);
        }
        if (s.validate()) {
          int at = differs(startBuf.address(), rdmaBuf.address(), size);
          if (at >= 0) {
            throw new PingPongFailure("data mismatch! ping " + ping + " came back different"
                + " from byte " + at + ": sent '" + RpingData.text(startBuf.address(), size)
                + "', got '" + RpingData.text(rdmaBuf.address(), size) + "'");
          }
        }
        if (s.verbose()) out.println("ping data: " + RpingData.text(rdmaBuf.address(), size));
      }
      return result(ping, start, allocatedBefore);
    }

    private static int differs(long a, long b, int size) {
      int i = 0;
      for (; i + 8 <= size; i += 8) {
        if (NativeMemory.getLong(a + i) != NativeMemory.getLong(b + i)) break;
      }
      for (; i < size; i++) {
        if (NativeMemory.getByte(a + i) != NativeMemory.getByte(b + i)) return i;
      }
      return -1;
    }

    private static RpingResult result(int pings, long start, long allocatedBefore) {
      double micros = (System.nanoTime() - start) / 1000.0;
      long allocated = allocatedBefore < 0 ? -1 : Allocations.currentThread() - allocatedBefore;
      return new RpingResult(pings, micros, allocated);
    }

    /** rping_disconnect when we end first; then our own DISCONNECTED, so the id closes clean. */
    private void disconnect() {
      if (!connected) return;
      connected = false;
      id.disconnect();
      long deadline = System.nanoTime() + DISCONNECT_WAIT.toNanos();
      while (System.nanoTime() - deadline < 0) {
        CmEvent ev = channel.awaitEvent(Duration.ofMillis(100));
        if (ev != null && ev.type() == CmEventType.DISCONNECTED) return;
      }
    }
  }

  static void printSummary(String side, RpingResult r, RpingSettings s, PrintStream out) {
    out.printf(Locale.ROOT, "%s: %d pings of %d bytes in %.2f seconds = %.2f usec/ping%s%n", side,
        r.pings(), s.size(), r.micros() / 1e6, r.pings() == 0 ? 0.0 : r.micros() / r.pings(),
        s.validate() ? ", data validated" : "");
  }
}
