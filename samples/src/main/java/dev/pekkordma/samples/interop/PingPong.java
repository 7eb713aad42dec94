package dev.pekkordma.samples.interop;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.samples.Allocations;
import dev.pekkordma.samples.CompletionPoller;
import dev.pekkordma.samples.Resources;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.LinkLayer;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code ibv_rc_pingpong} on the verbs API: the same TCP exchange of LID, QPN, PSN and GID, the
 * same QP attributes on the way RESET -> INIT -> RTR -> RTS, and the same ping-pong of SENDs, so
 * either side talks to the real tool. The client sends first; each side sends again once its
 * previous send completed and a message arrived, until both have done {@code iters}.
 */
final class PingPong {
  static final int RECV_WRID = 1;
  static final int SEND_WRID = 2;
  /** rc_pingpong fills its buffer with 0x7b; with --chk the client zeroes each page's first byte. */
  static final byte FILL = 0x7b;
  /** rc_pingpong's page is sysconf(_SC_PAGESIZE): 4 KiB on the x86-64 Linux it runs on here. */
  static final int PAGE = 4096;

  /** What rc_pingpong's options set. {@code gidIndex} -1 means no GID (route by LID). */
  record PingPongSettings(String device, int ibPort, int gidIndex, int size, Mtu mtu, int rxDepth,
      int iters, int sl, boolean check, boolean events, Duration timeout) {}

  /**
   * The outcome: {@code invalidPages} lists the pages whose data was not what a --chk client
   * sends (empty without --chk); {@code loopAllocatedBytes} what the ping-pong loop allocated on
   * the heap (-1 where the JVM does not count).
   */
  record PingPongResult(
      PingPongDest local,
      PingPongDest remote,
      int iters,
      long bytes,
      double micros,
      int[] invalidPages,
      long loopAllocatedBytes) {
    boolean dataOk() {
      return invalidPages.length == 0;
    }
  }

  private PingPong() {}

  /** Waits on {@code listener} for one client, plays the server's part and returns. */
  static PingPongResult serve(
      RdmaProvider provider, PingPongSettings s, ServerSocket listener, PrintStream out) {
    try (Side side = new Side(provider, s)) {
      out.println("  local address:  " + side.local.describe());
      out.flush();
      PingPongDest remote;
      try {
        listener.setSoTimeout((int) Math.min(Integer.MAX_VALUE, s.timeout().toMillis()));
        try (Socket c = listener.accept()) {
          c.setSoTimeout((int) Math.min(Integer.MAX_VALUE, s.timeout().toMillis()));
          remote = PingPongDest.decode(readFully(c.getInputStream(), PingPongDest.MESSAGE_SIZE,
              "the client's address"));
          // as rc_pingpong: ready to receive before the client learns where to send
          side.connect(remote);
          OutputStream o = c.getOutputStream();
          o.write(side.local.encode());
          o.flush();
          byte[] done = readFully(c.getInputStream(), PingPongDest.DONE.length,
              "the client's \"done\"");
          if (!Arrays.equals(done, PingPongDest.DONE)) {
            throw new PingPongFailure("the client sent " + Arrays.toString(done)
                + " where \"done\" belongs");
          }
        }
      } catch (SocketTimeoutException e) {
        throw new PingPongFailure("no client within " + s.timeout().toSeconds() + " s on TCP port "
            + listener.getLocalPort(), e);
      } catch (IOException e) {
        throw new PingPongFailure("exchanging addresses with the client: " + e, e);
      }
      out.println("  remote address: " + remote.describe());
      out.flush();
      return side.run(false, remote);
    }
  }

  /**
   * Connects to the server's TCP port (trying again for {@code retryFor} while nobody listens),
   * plays the client's part and returns.
   */
  static PingPongResult connect(RdmaProvider provider, PingPongSettings s, InetSocketAddress server,
      Duration retryFor, PrintStream out) {
    try (Side side = new Side(provider, s)) {
      out.println("  local address:  " + side.local.describe());
      out.flush();
      PingPongDest remote;
      try (Socket c = open(server, retryFor)) {
        c.setSoTimeout((int) Math.min(Integer.MAX_VALUE, s.timeout().toMillis()));
        OutputStream o = c.getOutputStream();
        o.write(side.local.encode());
        o.flush();
        remote = PingPongDest.decode(readFully(c.getInputStream(), PingPongDest.MESSAGE_SIZE,
            "the server's address"));
        o.write(PingPongDest.DONE);
        o.flush();
      } catch (IOException e) {
        throw new PingPongFailure("exchanging addresses with " + server + ": " + e, e);
      }
      out.println("  remote address: " + remote.describe());
      out.flush();
      side.connect(remote);
      return side.run(true, remote);
    }
  }

  private static Socket open(InetSocketAddress server, Duration retryFor) throws IOException {
    long deadline = System.nanoTime() + retryFor.toNanos();
    while (true) {
      Socket c = new Socket();
      try {
        c.connect(server, 10_000);
        return c;
      } catch (ConnectException e) {
        c.close();
        if (System.nanoTime() - deadline >= 0) {
          throw new PingPongFailure("couldn't connect to " + server + ": " + e.getMessage(), e);
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new PingPongFailure("interrupted while connecting to " + server);
        }
      } catch (IOException | RuntimeException e) {
        c.close();
        throw e;
      }
    }
  }

  private static byte[] readFully(InputStream in, int n, String what) throws IOException {
    byte[] b = in.readNBytes(n);
    if (b.length != n) {
      throw new PingPongFailure(what + ": the connection ended after " + b.length + " of " + n
          + " bytes");
    }
    return b;
  }

  /** One side's verbs resources, set up as pp_init_ctx does, and its ping-pong loop. */
  private static final class Side implements AutoCloseable {
    private final Resources res = new Resources();
    private final PingPongSettings s;
    private final DeviceContext ctx;
    private final OffHeapBuffer buf;
    private final MemoryRegion mr;
    private final CompletionPoller poller;
    private final QueuePair qp;
    private final RecvRequests recvs;
    private final SendRequests sends;
    private final int sendFlags;
    final PingPongDest local;

    Side(RdmaProvider provider, PingPongSettings s) {
      this.s = s;
      try {
        ctx = res.add(provider.open(device(provider, s.device())));
        PortAttributes port = ctx.queryPort(s.ibPort());
        if (port.linkLayer() == LinkLayer.ETHERNET && s.gidIndex() < 0) {
          throw new PingPongFailure(ctx.device().name() + " port " + s.ibPort() + " is Ethernet"
              + " (RoCE): QPs there need a GID, give -g/--gid-idx (0 on the software provider,"
              + " 1 for ::ffff:127.0.0.1 on Soft-RoCE's rxe_lo)");
        }
        if (port.linkLayer() != LinkLayer.ETHERNET && port.lid() == 0) {
          throw new PingPongFailure("couldn't get the local LID: " + ctx.device().name()
              + " port " + s.ibPort() + " has none");
        }
        Gid gid = s.gidIndex() >= 0 ? ctx.queryGid(s.ibPort(), s.gidIndex()) : Gid.ZERO;
        ProtectionDomain pd = res.add(ctx.allocPd());
        buf = res.add(OffHeapBuffer.allocate(s.size()));
        fill(buf.address(), s.size(), FILL);
        mr = res.add(pd.registerMemory(buf, Access.LOCAL_WRITE));
        poller = res.add(new CompletionPoller(ctx, s.rxDepth() + 1, 2, 200));
        recvs = res.add(new RecvRequests(s.rxDepth(), 1));
        sends = res.add(new SendRequests(1, 1));
        qp = res.add(pd.createQp(QpInitAttributes.of(QpType.RC, poller.cq, poller.cq)
            .maxSendWr(1).maxRecvWr(s.rxDepth()).maxSendSge(1).maxRecvSge(1)));
        sendFlags = SendRequests.SIGNALED
            | (qp.capabilities().maxInlineData() >= s.size() ? SendRequests.INLINE : 0);
        qp.modify(new QpAttributes().state(QpState.INIT).pkeyIndex(0).port(s.ibPort())
            .accessFlags(0));
        postRecvs(s.rxDepth());
        local = new PingPongDest(port.lid(), qp.qpNum(),
            ThreadLocalRandom.current().nextInt() & 0xffffff, gid);
      } catch (RuntimeException e) {
        try {
          res.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    }

    private static RdmaDevice device(RdmaProvider provider, String name) {
      if (provider.devices().isEmpty()) {
        throw new PingPongFailure("the " + provider.name() + " provider has no devices");
      }
      if (name == null) return provider.devices().get(0);
      for (RdmaDevice d : provider.devices()) if (d.name().equals(name)) return d;
      throw new PingPongFailure("IB device " + name + " not found; the " + provider.name()
          + " provider has " + provider.devices().stream().map(RdmaDevice::name).toList());
    }

    /** pp_connect_ctx: RTR with the peer's address and PSN, then RTS with ours. */
    void connect(PingPongDest remote) {
      AddressVector av;
      if (remote.global()) {
        if (s.gidIndex() < 0) {
          throw new PingPongFailure("the peer routes by GID (" + PingPongDest.ipv6Text(
              remote.gid()) + "): give -g/--gid-idx for ours");
        }
        av = new AddressVector(remote.lid(), s.sl(), s.ibPort(), true, remote.gid(), s.gidIndex(),
            1, 0, 0);
      } else {
        av = new AddressVector(remote.lid(), s.sl(), s.ibPort(), false, Gid.ZERO, 0, 0, 0, 0);
      }
      qp.modify(new QpAttributes().state(QpState.RTR).addressVector(av).pathMtu(s.mtu())
          .destQpNum(remote.qpn()).rqPsn(remote.psn()).maxDestRdAtomic(1).minRnrTimer(12));
      qp.modify(new QpAttributes().state(QpState.RTS).timeout(14).retryCount(7).rnrRetry(7)
          .sqPsn(local.psn()).maxRdAtomic(1));
    }

    private void postRecvs(int n) {
      if (n <= 0) return;
      recvs.clear();
      for (int i = 0; i < n; i++) recvs.add(RECV_WRID).sge(mr, 0, s.size());
      qp.postRecv(recvs);
    }

    private void postSend() {
      sends.clear();
      sends.add(SEND_WRID, WrOpcode.SEND, sendFlags).sge(mr, 0, s.size());
      qp.postSend(sends);
    }

    /** The loop of rc_pingpong's main and parse_single_wc. */
    PingPongResult run(boolean client, PingPongDest remote) {
      int iters = s.iters();
      int routs = s.rxDepth();
      int pending = RECV_WRID;
      if (client) {
        if (s.check()) for (int i = 0; i < s.size(); i += PAGE) NativeMemory.putByte(buf.address() + i, (byte) 0);
        postSend();
        pending |= SEND_WRID;
      }
      WorkCompletions wcs = poller.wcs;
      long timeoutNanos = s.timeout().toNanos();
      int scnt = 0;
      int rcnt = 0;
      long allocatedBefore = Allocations.currentThread();
      long start = System.nanoTime();
      while (rcnt < iters || scnt < iters) {
        int n = s.events() ? poller.await(timeoutNanos) : spin(timeoutNanos);
        if (n == 0) {
          throw new PingPongFailure("no completion for " + s.timeout().toSeconds() + " s: sent "
              + scnt + ", received " + rcnt + " of " + iters);
        }
        for (int i = 0; i < n; i++) {
          if (!wcs.ok(i)) {
            throw new PingPongFailure("Failed status " + wcs.status(i) + " ("
                + wcs.statusCode(i) + ") for wr_id " + wcs.wrId(i) + " after sending " + scnt
                + " and receiving " + rcnt);
          }
          int wrId = (int) wcs.wrId(i);
          if (wrId == SEND_WRID) {
            scnt++;
          } else if (wrId == RECV_WRID) {
            if (--routs <= 1) {
              postRecvs(s.rxDepth() - routs);
              routs = s.rxDepth();
            }
            rcnt++;
          } else {
            throw new PingPongFailure("completion for unknown wr_id " + wcs.wrId(i));
          }
          pending &= ~wrId;
          if (scnt < iters && pending == 0) {
            postSend();
            pending = RECV_WRID | SEND_WRID;
          }
        }
      }
      double micros = (System.nanoTime() - start) / 1000.0;
      long allocated = allocatedBefore < 0 ? -1 : Allocations.currentThread() - allocatedBefore;
      int[] invalid = s.check() ? invalidPages() : new int[0];
      return new PingPongResult(local, remote, iters, (long) s.size() * iters * 2, micros, invalid,
          allocated);
    }

    /** rc_pingpong's default: poll the CQ until something comes (or the timeout passes). */
    private int spin(long timeoutNanos) {
      int n = poller.poll();
      if (n > 0) return n;
      long deadline = System.nanoTime() + timeoutNanos;
      while (true) {
        for (int i = 0; i < 1024; i++) {
          Thread.onSpinWait();
          n = poller.poll();
          if (n > 0) return n;
        }
        if (System.nanoTime() - deadline >= 0) return 0;
      }
    }

    /** Pages whose first byte is not the 0 a --chk client writes, or whose rest is not 0x7b. */
    private int[] invalidPages() {
      int pages = (s.size() + PAGE - 1) / PAGE;
      int[] bad = new int[pages];
      int count = 0;
      long a = buf.address();
      for (int p = 0; p < pages; p++) {
        int from = p * PAGE;
        int to = Math.min(s.size(), from + PAGE);
        boolean ok = NativeMemory.getByte(a + from) == 0;
        for (int i = from + 1; ok && i < to; i++) ok = NativeMemory.getByte(a + i) == FILL;
        if (!ok) bad[count++] = p;
      }
      return Arrays.copyOf(bad, count);
    }

    @Override
    public void close() {
      res.close();
    }
  }

  static void fill(long address, int length, byte value) {
    for (int i = 0; i < length; i++) NativeMemory.putByte(address + i, value);
  }

  /** rc_pingpong's two summary lines. */
  static void printSummary(PingPongResult r, PrintStream out) {
    out.printf(Locale.ROOT, "%d bytes in %.2f seconds = %.2f Mbit/sec%n", r.bytes(),
        r.micros() / 1e6, r.bytes() * 8.0 / r.micros());
    out.printf(Locale.ROOT, "%d iters in %.2f seconds = %.2f usec/iter%n", r.iters(),
        r.micros() / 1e6, r.micros() / r.iters());
    for (int p : r.invalidPages()) out.printf(Locale.ROOT, "invalid data in page %d%n", p);
  }
}
