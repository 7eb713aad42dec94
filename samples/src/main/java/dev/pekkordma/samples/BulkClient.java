package dev.pekkordma.samples;

import dev.pekkordma.memory.NativeMemory;
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
 * The sending side. It connects through the CM, announcing the transfer in the connect's private
 * data and learning the server's ring from the accept's. Then it keeps at most {@code min(depth,
 * credits)} chunks in flight: each chunk is generated into a free source slot, added to the
 * CRC32C and posted; the server's credit messages free ring slots and local completions free
 * source slots. A FIN with the count and CRC32C ends the data; the server's verdict ends the run.
 */
public final class BulkClient {
  /** What to send and how. */
  public record ClientSettings(
      long totalBytes,
      int chunkSize,
      int depth,
      TransferMode mode,
      long seed,
      long sourceLimit,
      Duration timeout,
      int spins,
      long corruptAt) {}

  /** What happened, as the client saw it. */
  public record ClientResult(
      long bytes,
      long chunks,
      double seconds,
      int clientCrc,
      int serverCrc,
      boolean serverSaysOk,
      ChecksumVerifier.ChecksumReport check,
      int serverSlots,
      int window,
      long loopAllocatedBytes) {
    public double mibPerSecond() {
      return bytes / (1024.0 * 1024.0) / seconds;
    }

    public double gbitPerSecond() {
      return bytes * 8.0 / 1e9 / seconds;
    }

    public boolean ok() {
      return serverSaysOk && check.ok();
    }
  }

  private static final long FIN_WRID = -1L;

  private final RdmaProvider provider;
  private final ClientSettings settings;
  private final PrintStream log;
  private final boolean verbose;

  public BulkClient(
      RdmaProvider provider, ClientSettings settings, PrintStream log, boolean verbose) {
    this.provider = provider;
    this.settings = settings;
    this.log = log;
    this.verbose = verbose;
  }

  /**
   * Checks what can be checked before connecting; throws {@link IllegalArgumentException} naming
   * the option.
   */
  public static void validate(long size, long chunk, int depth) {
    if (size <= 0) throw new BadOption("--size must be positive, was " + size);
    if (chunk <= 0) throw new BadOption("--chunk must be positive, was " + chunk);
    if (depth < 1 || depth > 4096) {
      throw new BadOption("--depth must be in [1, 4096], was " + depth);
    }
  }

  /** Connects with the connection manager and sends. */
  public ClientResult run(InetSocketAddress server, Progress.Display progressKind) {
    return run(CmBulkLink.connector(provider), server, progressKind);
  }

  ClientResult run(
      BulkLink.Dialer connector, InetSocketAddress server, Progress.Display progressKind) {
    ClientSettings s = settings;
    try (Resources res = new Resources()) {
      BulkLink.Outgoing link = res.add(connector.open(server));
      DeviceContext ctx = link.context();
      long maxMsg = ctx.queryPort(link.port()).maxMsgSize();
      if (s.chunkSize() > maxMsg) {
        throw new BadOption("--chunk " + ByteSize.format(s.chunkSize())
            + " is larger than the device's max message size " + ByteSize.format(maxMsg)
            + " (" + ctx.device().name() + ")");
      }
      DeviceAttributes dev = ctx.queryDevice();
      if (s.depth() + 2 > dev.maxQpWr()) {
        throw new BadOption("--depth " + s.depth() + " needs " + (s.depth() + 2)
            + " work requests per queue; the device allows " + dev.maxQpWr());
      }
      // source slots: one per request in flight, within the memory limit
      int srcSlots = (int) Math.min(s.depth(), Math.max(1, s.sourceLimit() / s.chunkSize()));
      srcSlots = (int) Math.min(srcSlots, Integer.MAX_VALUE / s.chunkSize());
      int rqDepth = s.depth() + 2; // credits (at most one message per slot), verdict, spare
      int sqDepth = s.depth() + 2; // data, FIN
      ProtectionDomain pd = res.add(ctx.allocPd());
      CompletionPoller poller = res.add(
          new CompletionPoller(ctx, rqDepth + sqDepth + 8, rqDepth + sqDepth, s.spins()));
      OffHeapBuffer src = res.add(OffHeapBuffer.allocate((long) srcSlots * s.chunkSize()));
      MemoryRegion srcMr = res.add(pd.registerMemory(src, Access.LOCAL_WRITE));
      // control: one receive buffer per receive, then the FIN
      OffHeapBuffer ctrl =
          res.add(OffHeapBuffer.allocate((long) (rqDepth + 1) * BulkWire.CONTROL_SIZE));
      MemoryRegion ctrlMr = res.add(pd.registerMemory(ctrl, Access.LOCAL_WRITE));
      RecvRequests recvs = res.add(new RecvRequests(rqDepth, 1));
      SendRequests sends = res.add(new SendRequests(s.depth() + 1, 1));
      QueuePair qp = link.createQp(pd, QpInitAttributes.of(QpType.RC, poller.cq, poller.cq)
          .maxSendWr(sqDepth).maxRecvWr(rqDepth).maxSendSge(1).maxRecvSge(1));
      res.onClose(link::destroyQp);

      BulkWire.TransferPlan hello = new BulkWire.TransferPlan(s.mode(), s.totalBytes(),
          s.chunkSize(), s.depth(), s.seed());
      BulkWire.RingInfo ring = link.connect(hello);
      try {
        if (ring.slotSize() < Math.max(s.chunkSize(), BulkWire.Fin.LENGTH)) {
          throw new TransferFailure("the server's slots have " + ring.slotSize()
              + " bytes, too few for a chunk or the FIN");
        }
        if (ring.slots() > s.depth()) {
          throw new TransferFailure("the server offers " + ring.slots() + " slots, more than"
              + " --depth " + s.depth() + " (not a bulk-transfer server?)");
        }
        int window = Math.min(srcSlots, ring.slots());
        if (verbose) {
          log.printf("client: connected to %s; ring of %d slots at 0x%x, rkey 0x%x; %d in flight%n",
              link.peer(), ring.slots(), ring.address(), ring.rkey(), window);
        }
        for (int r = 0; r < rqDepth; r++) {
          recvs.add(r).sge(ctrlMr, (long) r * BulkWire.CONTROL_SIZE, BulkWire.CONTROL_SIZE);
        }
        qp.postRecv(recvs);
        ClientResult result;
        try (Progress progress = Progress.create(progressKind, "sent", s.totalBytes(), log)) {
          result = transfer(hello, ring, window, qp, poller, src, srcMr, ctrl, ctrlMr, recvs,
              sends, rqDepth, progress, link.peer());
        }
        link.disconnect();
        return result;
      } finally {
        try {
          link.disconnect();
        } catch (RuntimeException e) {
          if (verbose) log.println("client: disconnect: " + e.getMessage());
        }
      }
    }
  }

  /**
   * A failed completion as the user should read it: which peer (its address), what failed, and
   * why, as far as the QP knows.
   */
  static TransferFailure completionFailure(String side, String peer, QueuePair qp,
      WorkCompletions wcs, int i) {
    String why = qp.errorCause().map(c -> " (" + c + ")").orElse("");
    if (wcs.status(i) == WcStatus.WR_FLUSH_ERR) {
      return new TransferFailure(side + ": the connection to " + peer + " went down (did the"
          + " peer stop?): its requests were flushed: " + wcs.describe(i) + why);
    }
    return new TransferFailure(side + ": work completion failed with " + peer + ": "
        + wcs.describe(i) + why);
  }

  private ClientResult transfer(BulkWire.TransferPlan hello, BulkWire.RingInfo ring, int window,
      QueuePair qp, CompletionPoller poller, OffHeapBuffer src, MemoryRegion srcMr,
      OffHeapBuffer ctrl, MemoryRegion ctrlMr, RecvRequests recvs, SendRequests sends,
      int rqDepth, Progress progress, String peer) {
    ClientSettings s = settings;
    int chunk = s.chunkSize();
    ByteBuffer[] srcViews = new ByteBuffer[window];
    for (int i = 0; i < window; i++) srcViews[i] = src.view(i * chunk, chunk);
    ByteBuffer[] ctrlViews = new ByteBuffer[rqDepth + 1];
    for (int i = 0; i <= rqDepth; i++) {
      ctrlViews[i] = ctrl.view(i * BulkWire.CONTROL_SIZE, BulkWire.CONTROL_SIZE);
    }
    long finOffset = (long) rqDepth * BulkWire.CONTROL_SIZE;
    long srcBase = src.address();
    int lkey = srcMr.lkey();
    long ringAddr = ring.address();
    int rkey = ring.rkey();
    int slots = ring.slots();
    long slotSize = ring.slotSize();
    WrOpcode opcode = s.mode() == TransferMode.WRITE ? WrOpcode.RDMA_WRITE_WITH_IMM
        : WrOpcode.SEND_WITH_IMM;
    long chunks = hello.chunks();
    long timeoutNanos = s.timeout().toNanos();
    WorkCompletions wcs = poller.wcs;
    CRC32C crc = new CRC32C();

    long posted = 0; // chunks posted
    long completed = 0; // chunks whose send completed here: their source slot is free
    long credited = 0; // chunks the server consumed: their ring slot is free
    boolean finPosted = false;
    boolean finDone = false;
    BulkWire.Verdict verdict = null;
    long start = System.nanoTime();
    long allocatedBefore = Allocations.currentThread();
    while (verdict == null || !finDone) {
      sends.clear();
      while (posted < chunks && posted - completed < window && posted - credited < slots) {
        int slot = (int) (posted % window);
        int len = hello.chunkLength(posted);
        long addr = srcBase + (long) slot * chunk;
        DataPattern.fill(addr, len, s.seed(), posted);
        ByteBuffer v = srcViews[slot];
        v.clear().limit(len);
        crc.update(v);
        long corrupt = s.corruptAt() - posted * chunk;
        if (corrupt >= 0 && corrupt < len) {
          // test hook: the bytes sent differ from the bytes summed
          NativeMemory.putByte(addr + corrupt, (byte) ~NativeMemory.getByte(addr + corrupt));
        }
        sends.add(posted, opcode, SendRequests.SIGNALED).sge(addr, len, lkey)
            .immediate((int) (posted & BulkWire.SEQ_MASK));
        if (opcode == WrOpcode.RDMA_WRITE_WITH_IMM) {
          sends.rdma(ringAddr + (posted % slots) * slotSize, rkey);
        }
        posted++;
      }
      if (!finPosted && posted == chunks && posted - credited < slots) {
        new BulkWire.Fin(s.totalBytes(), chunks, (int) crc.getValue())
            .encode(ctrlViews[rqDepth]);
        sends.add(FIN_WRID, WrOpcode.SEND_WITH_IMM, SendRequests.SIGNALED)
            .sge(ctrlMr, finOffset, BulkWire.Fin.LENGTH).immediate(BulkWire.FIN_IMM);
        finPosted = true;
      }
      if (sends.size() > 0) qp.postSend(sends);

      int n = poller.await(timeoutNanos);
      if (n == 0) {
        throw new TransferFailure("client: no completion for " + s.timeout().toSeconds()
            + " s (posted " + posted + " of " + chunks + " chunks, " + completed + " completed, "
            + credited + " consumed by the server" + (finPosted ? ", FIN posted" : "") + ")");
      }
      recvs.clear();
      for (int i = 0; i < n; i++) {
        if (!wcs.ok(i)) throw completionFailure("client", peer, qp, wcs, i);
        WcOpcode op = wcs.opcode(i);
        if (op == WcOpcode.RECV) {
          int r = (int) wcs.wrId(i);
          if (wcs.hasImmediate(i)) {
            long consumed = credited + Integer.toUnsignedLong(wcs.immediate(i) - (int) credited);
            if (consumed > posted) {
              throw new TransferFailure("client: protocol error: the server consumed " + consumed
                  + " chunks of " + posted + " posted");
            }
            credited = consumed;
          } else {
            verdict = BulkWire.Verdict.decode(ctrlViews[r], wcs.byteLength(i));
          }
          recvs.add(r).sge(ctrlMr, (long) r * BulkWire.CONTROL_SIZE, BulkWire.CONTROL_SIZE);
        } else if (wcs.wrId(i) == FIN_WRID) {
          finDone = true;
        } else {
          if (wcs.wrId(i) != completed) {
            throw new TransferFailure("client: send completions out of order: expected chunk "
                + completed + ", got " + wcs.describe(i));
          }
          completed++;
        }
      }
      if (recvs.size() > 0 && verdict == null) qp.postRecv(recvs);
      progress.update(Math.min(credited * chunk, s.totalBytes()));
    }
    long allocated = Allocations.currentThread() - allocatedBefore;
    double seconds = (System.nanoTime() - start) / 1e9;
    // the last credit may never come (the server sends none once it has the FIN): the verdict counts
    progress.update(verdict.bytes());
    int ourCrc = (int) crc.getValue();
    ChecksumVerifier.ChecksumReport check = ChecksumVerifier.verify(s.totalBytes(), chunks, ourCrc,
        verdict.bytes(), verdict.chunks(), verdict.crc());
    return new ClientResult(
        s.totalBytes(),
        chunks,
        seconds,
        ourCrc,
        verdict.crc(),
        verdict.ok(),
        check,
        slots,
        window,
        allocatedBefore < 0 ? -1 : allocated);
  }
}
