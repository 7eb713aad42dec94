package dev.pekkordma.samples;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.DeviceAttributes;
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
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.zip.CRC32C;

/**
 * The receiving side. It listens, takes one connection, registers a ring of slots and tells the
 * client where it is in the accept. For each chunk it checks the order, adds the bytes to its
 * CRC32C, re-arms the slot (posts a receive on it) and then returns the credit; at the end it
 * compares its count and CRC32C with the client's FIN and sends its verdict.
 */
public final class BulkServer implements AutoCloseable {
  /** Server-side knobs. */
  public record ServerOptions(long ringLimit, Duration idleTimeout, int spins) {
    public static ServerOptions defaults() {
      return new ServerOptions(256L << 20, Duration.ofSeconds(30), 200);
    }
  }

  /** What the server received and how it judged it. */
  public record ServerResult(
      BulkWire.TransferPlan hello,
      int slots,
      long bytes,
      long chunks,
      int crc,
      int clientCrc,
      ChecksumVerifier.ChecksumReport check,
      double seconds,
      long loopAllocatedBytes) {}

  private static final long CREDIT_WRID = -1L;
  private static final long VERDICT_WRID = -2L;

  private final BulkLink.Listener listener;
  private final ServerOptions options;
  private final PrintStream log;
  private final boolean verbose;
  private volatile boolean stopping;
  private volatile boolean clientSeen;

  /** Serves the clients that come to {@code listener} (which it closes at the end). */
  public BulkServer(
      BulkLink.Listener listener, ServerOptions options, PrintStream log, boolean verbose) {
    this.listener = listener;
    this.options = options;
    this.log = log;
    this.verbose = verbose;
  }

  /** Listens with the connection manager on {@code bind} (port 0 picks one). */
  public static BulkServer listen(
      RdmaProvider provider,
      InetSocketAddress bind,
      ServerOptions options,
      PrintStream log,
      boolean verbose) {
    return new BulkServer(CmBulkLink.listen(provider, bind, log, verbose), options, log, verbose);
  }

  public InetSocketAddress localAddress() {
    return listener.localAddress();
  }

  /** Whether a client has asked to connect. */
  public boolean clientSeen() {
    return clientSeen;
  }

  /** Makes a {@link #serveOne} that still waits for a client give up. */
  public void stop() {
    stopping = true;
  }

  /** Serves one client, waiting at most {@code acceptTimeout} for it. */
  public ServerResult serveOne(Duration acceptTimeout, Progress.Display progressKind) {
    BulkLink.Incoming in = listener.next(acceptTimeout, () -> stopping);
    if (in == null) {
      throw new TransferFailure(stopping ? "server stopped before a client connected"
          : "no client connected within " + acceptTimeout.toSeconds() + " s");
    }
    clientSeen = true;
    BulkWire.TransferPlan hello = in.hello();
    DeviceContext ctx = in.context();
    long maxMsg = ctx.queryPort(in.port()).maxMsgSize();
    if (hello.chunkSize() > maxMsg) {
      String why = "chunk size " + hello.chunkSize() + " is larger than the server device's max"
          + " message size " + maxMsg;
      in.reject(why);
      throw new TransferFailure("rejected a client: " + why);
    }
    DeviceAttributes dev = ctx.queryDevice();
    // a slot takes a chunk, and the FIN that lands in one like a chunk does
    int slotSize = Math.max(hello.chunkSize(), BulkWire.CONTROL_SIZE);
    int slots = (int) Math.min(hello.depth(), Math.max(1, options.ringLimit() / slotSize));
    slots = Math.min(slots, Integer.MAX_VALUE / slotSize);
    slots = Math.min(slots, Math.min(dev.maxQpWr() - 4, dev.maxCqe() / 2 - 8));
    if (slots < 1) {
      in.reject("the server device's queues are too small");
      throw new TransferFailure("device limits too small: " + dev);
    }
    try (Resources res = new Resources()) {
      res.onClose(in);
      return serve(in, ctx, hello, slots, slotSize, res, progressKind);
    }
  }

  private ServerResult serve(BulkLink.Incoming in, DeviceContext ctx, BulkWire.TransferPlan hello,
      int slots, int slotSize, Resources res, Progress.Display progressKind) {
    ProtectionDomain pd = res.add(ctx.allocPd());
    int sqDepth = slots + 4;
    int rqDepth = slots + 1;
    CompletionPoller poller = res.add(
        new CompletionPoller(ctx, sqDepth + rqDepth + 8, Math.max(16, rqDepth), options.spins()));
    OffHeapBuffer ring = res.add(OffHeapBuffer.allocate((long) slots * slotSize));
    MemoryRegion ringMr = res.add(pd.registerMemory(ring, Access.LOCAL_WRITE | Access.REMOTE_WRITE));
    OffHeapBuffer ctrl = res.add(OffHeapBuffer.allocate(BulkWire.CONTROL_SIZE));
    MemoryRegion ctrlMr = res.add(pd.registerMemory(ctrl, Access.LOCAL_WRITE));
    RecvRequests recvs = res.add(new RecvRequests(rqDepth, 1));
    SendRequests sends = res.add(new SendRequests(2, 1));
    QueuePair qp = in.createQp(pd, QpInitAttributes.of(QpType.RC, poller.cq, poller.cq)
        .maxSendWr(sqDepth).maxRecvWr(rqDepth).maxSendSge(1).maxRecvSge(1));
    res.onClose(in::destroyQp);
    ByteBuffer[] slotViews = new ByteBuffer[slots];
    for (int s = 0; s < slots; s++) {
      slotViews[s] = ring.view(s * slotSize, slotSize);
    }

    // every slot armed before the client hears of the ring: it can never meet an empty queue
    for (int s = 0; s < slots; s++) {
      recvs.add(s).sge(ringMr, (long) s * slotSize, slotSize);
    }
    qp.postRecv(recvs);
    BulkWire.RingInfo ringInfo =
        new BulkWire.RingInfo(ringMr.address(), ringMr.rkey(), slots, slotSize);
    in.accept(ringInfo);
    if (verbose) {
      log.printf("server: connected to %s; %s in %d-byte chunks by %s, ring of %d slots%n",
          in.peer(), ByteSize.format(hello.totalBytes()), hello.chunkSize(),
          hello.mode().name().toLowerCase(), slots);
    }

    try (Progress progress = Progress.create(progressKind, "received", hello.totalBytes(), log)) {
      long start = System.nanoTime();
      CRC32C crc = new CRC32C();
      WorkCompletions wcs = poller.wcs;
      long chunks = hello.chunks();
      long expected = 0; // the next chunk
      long credited = 0; // chunks the client has been told are consumed
      int sendsOutstanding = 0;
      long bytes = 0;
      BulkWire.Fin fin = null;
      long idleNanos = options.idleTimeout().toNanos();
      long allocatedBefore = Allocations.currentThread();
      WcOpcode dataOpcode =
          hello.mode() == TransferMode.WRITE ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV;
      while (fin == null) {
        int n = poller.await(idleNanos);
        if (n == 0) {
          throw new TransferFailure("server: nothing from the client for "
              + options.idleTimeout().toSeconds() + " s (received " + expected + " of " + chunks
              + " chunks)");
        }
        recvs.clear();
        for (int i = 0; i < n; i++) {
          if (!wcs.ok(i)) throw BulkClient.completionFailure("server", in.peer(), qp, wcs, i);
          WcOpcode op = wcs.opcode(i);
          if (op == WcOpcode.SEND) {
            sendsOutstanding--;
            continue;
          }
          int slot = (int) wcs.wrId(i);
          if (!wcs.hasImmediate(i)) {
            throw new TransferFailure("server: protocol error: a message without immediate data: "
                + wcs.describe(i));
          }
          int imm = wcs.immediate(i);
          if (imm == BulkWire.FIN_IMM && op == WcOpcode.RECV) {
            fin = BulkWire.Fin.decode(slotViews[slot], wcs.byteLength(i));
            continue;
          }
          if (fin != null || expected >= chunks) {
            throw new TransferFailure("server: protocol error: data after the last chunk: "
                + wcs.describe(i));
          }
          int dataSlot = (int) (expected % slots);
          if (op != dataOpcode || imm != (int) (expected & BulkWire.SEQ_MASK) || slot != dataSlot) {
            throw new TransferFailure("server: protocol error: expected chunk " + expected
                + " (immediate " + (expected & BulkWire.SEQ_MASK) + ", " + dataOpcode + ") in slot "
                + dataSlot + ", got " + wcs.describe(i) + " on the receive of slot " + slot);
          }
          int len = hello.chunkLength(expected);
          if (wcs.byteLength(i) != len) {
            throw new TransferFailure("server: chunk " + expected + " has " + wcs.byteLength(i)
                + " bytes, expected " + len + ": " + wcs.describe(i));
          }
          ByteBuffer v = slotViews[dataSlot];
          v.clear().limit(len);
          crc.update(v);
          bytes += len;
          expected++;
          // consumed: re-arm the slot before anyone is told it is free
          recvs.add(slot).sge(ringMr, (long) slot * slotSize, slotSize);
        }
        if (recvs.size() > 0) qp.postRecv(recvs);
        // one credit message per batch, cumulative; postponed while the send queue is full
        if (fin == null && expected > credited && sendsOutstanding < sqDepth - 1) {
          sends.clear();
          sends.add(CREDIT_WRID, WrOpcode.SEND_WITH_IMM, SendRequests.SIGNALED)
              .immediate((int) expected);
          qp.postSend(sends);
          sendsOutstanding++;
          credited = expected;
        }
        progress.update(bytes);
      }
      long allocated = Allocations.currentThread() - allocatedBefore;
      double seconds = (System.nanoTime() - start) / 1e9;
      int ourCrc = (int) crc.getValue();
      ChecksumVerifier.ChecksumReport check =
          ChecksumVerifier.verify(fin.bytes(), fin.chunks(), fin.crc(), bytes, expected, ourCrc);
      if (fin.bytes() != hello.totalBytes()) {
        check = new ChecksumVerifier.ChecksumReport(false, append(check, "client announced "
            + hello.totalBytes() + " bytes but its FIN says " + fin.bytes()));
      }

      // the verdict; wait for its completion so the client surely has it before we go
      new BulkWire.Verdict(check.ok(), bytes, expected, ourCrc)
          .encode(ctrl.view(0, BulkWire.CONTROL_SIZE));
      while (sendsOutstanding >= sqDepth) {
        sendsOutstanding -= countSends(poller, idleNanos, in.peer(), qp);
      }
      sends.clear();
      sends.add(VERDICT_WRID, WrOpcode.SEND, SendRequests.SIGNALED)
          .sge(ctrlMr, 0, BulkWire.Verdict.LENGTH);
      qp.postSend(sends);
      sendsOutstanding++;
      // Wait for the verdict's completion. The client disconnects as soon as it has the verdict,
      // and that can overtake the acknowledgement: then the verdict and the receives still armed
      // complete flushed, which at this point is the end of the connection, not a failure.
      boolean verdictDone = false;
      while (!verdictDone) {
        int n = poller.await(idleNanos);
        if (n == 0) throw new TransferFailure("server: the verdict was never acknowledged");
        for (int i = 0; i < n; i++) {
          boolean flushed = wcs.status(i) == WcStatus.WR_FLUSH_ERR;
          if (!wcs.ok(i) && !flushed) throw BulkClient.completionFailure("server", in.peer(), qp, wcs, i);
          if (wcs.wrId(i) == VERDICT_WRID) {
            verdictDone = true;
            if (flushed && verbose) {
              log.println("server: the client disconnected before the verdict was acknowledged");
            }
          }
        }
      }
      // the client disconnects once it has the verdict
      if (!in.awaitPeerDisconnect(Duration.ofSeconds(10)) && verbose) {
        log.println("server: the client did not disconnect in 10 s; disconnecting");
      }
      return new ServerResult(hello, slots, bytes, expected, ourCrc, fin.crc(), check, seconds,
          allocatedBefore < 0 ? -1 : allocated);
    } finally {
      try {
        in.disconnect();
      } catch (RuntimeException e) {
        if (verbose) log.println("server: disconnect: " + e.getMessage());
      }
    }
  }

  private static java.util.List<String> append(ChecksumVerifier.ChecksumReport r, String problem) {
    java.util.List<String> l = new java.util.ArrayList<>(r.problems());
    l.add(problem);
    return java.util.List.copyOf(l);
  }

  private static int countSends(CompletionPoller poller, long timeoutNanos, String peer,
      QueuePair qp) {
    int n = poller.await(timeoutNanos);
    if (n == 0) throw new TransferFailure("server: the client stopped taking credit messages");
    int sends = 0;
    for (int i = 0; i < n; i++) {
      if (!poller.wcs.ok(i)) throw BulkClient.completionFailure("server", peer, qp, poller.wcs, i);
      if (poller.wcs.opcode(i) == WcOpcode.SEND) sends++;
    }
    return sends;
  }

  @Override
  public void close() {
    listener.close();
  }
}
