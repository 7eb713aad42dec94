package dev.pekkordma.soft;

import dev.pekkordma.verbs.abi.RequestLayout;
import dev.pekkordma.verbs.spi.Checks;
import static dev.pekkordma.soft.SoftPeer.Response.ACK;
import static dev.pekkordma.soft.SoftPeer.Response.NAK_INVALID_REQUEST;
import static dev.pekkordma.soft.SoftPeer.Response.NAK_REMOTE_ACCESS;
import static dev.pekkordma.soft.SoftPeer.Response.NAK_REMOTE_OPERATION;
import static dev.pekkordma.soft.SoftPeer.Response.RNR_NAK;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WrOpcode;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A QP's send queue and requester: requests posted into preallocated slots, worked by an engine
 * (the device's, or the fabric link's for a peer in another process), completed in posting order.
 * RC's timers live here: the transport timer (no answer within the QP's timeout: retry, then
 * RETRY_EXC_ERR) and the RNR timer. State is guarded by the QP's monitor.
 */
final class Requester {
  private static final int OK = -1;
  /** Requests on the wire before an answer, for peers in other processes. */
  static final int MAX_IN_FLIGHT = 64;
  // a slot's copy of ibv_send_wr has two fields the engine may reuse: next and qp_type
  private static final int OFF_DONE_STATUS = 72; // WcStatus code + 1; 0 while pending
  private static final int OFF_DONE_LENGTH = RequestLayout.OFF_NEXT;

  private final SoftQp qp;
  private final OffHeapBuffer memory;
  private final int slotSize;
  private final int capacity;
  // guarded by qp
  private long head; // oldest not completed
  private long sent; // next to start
  private long tail; // next free
  /** The engine reads a request's slot outside the monitor: the slots wait for it to finish. */
  private boolean executing;
  private boolean freed;
  /** RC's transport and RNR timers, and the retry counts they spend. */
  private final RcTimers timers;

  private final AtomicBoolean scheduled = new AtomicBoolean();
  /** Held by whoever works the send queue, an engine or a poster: one at a time. */
  private final AtomicBoolean working = new AtomicBoolean();

  // reused by whoever works the queue (one at a time), or under the monitor
  private final SoftPeer.RequestHeader header = new SoftPeer.RequestHeader();
  private final SoftPeer.Response response = new SoftPeer.Response();
  private final Segments gather;
  private final Segments local;
  private final Segments answerTarget; // a response's destination, filled under the monitor

  Requester(SoftQp qp) {
    this.qp = qp;
    this.capacity = qp.caps.maxSendWr();
    this.slotSize = RequestLayout.SEND_WR_SIZE + qp.caps.maxSendSge() * RequestLayout.SGE_SIZE
        + ((qp.caps.maxInlineData() + 7) & ~7);
    this.memory = OffHeapBuffer.allocate((long) capacity * slotSize);
    this.gather = new Segments(qp.caps.maxSendSge());
    this.local = new Segments(qp.caps.maxSendSge());
    this.answerTarget = new Segments(qp.caps.maxSendSge());
    this.timers = new RcTimers(qp, this);
  }

  // ---------------------------------------------------------------- posting (under the monitor)

  boolean idle() {
    return sent == tail;
  }

  long tail() {
    return tail;
  }

  boolean drained() {
    return head == sent;
  }

  /** Copies request {@code i} of {@code r} into the next slot, checking what posting checks. */
  void enqueue(SendRequests r, int i) {
    long from = r.requestAddress(i);
    WrOpcode op = WrOpcode.of(NativeMemory.getInt(from + RequestLayout.OFF_OPCODE));
    int flags = NativeMemory.getInt(from + RequestLayout.OFF_SEND_FLAGS);
    int numSge = NativeMemory.getInt(from + RequestLayout.OFF_NUM_SGE);
    if (!qp.type.allows(op)) {
      throw new RdmaException("ibv_post_send", RdmaException.EINVAL,
          which(i, from) + ": opcode " + op + " is not supported on " + qp.type + " QPs");
    }
    if (numSge < 0 || numSge > qp.caps.maxSendSge()) {
      throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which(i, from) + " has "
          + numSge + " SGEs; the QP takes at most " + qp.caps.maxSendSge() + " (max_send_sge)");
    }
    if (qp.type == QpType.UD && op.isSend()) {
      String over = Checks.overMtu(RequestLayout.gatheredLength(
          NativeMemory.getLong(from + RequestLayout.OFF_SG_LIST), numSge), qp.device.settings.mtu);
      if (over != null) {
        throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which(i, from) + ": "
            + over + " (a UD message is one packet)");
      }
    }
    if (tail - head >= capacity) {
      throw new RdmaException("ibv_post_send", RdmaException.ENOMEM, which(i, from)
          + ": the send queue already holds " + capacity + " outstanding requests (max_send_wr)");
    }
    long slot = slot(tail);
    NativeMemory.copy(from, slot, RequestLayout.SEND_WR_SIZE);
    long sges = slot + RequestLayout.SEND_WR_SIZE;
    NativeMemory.putLong(slot + RequestLayout.OFF_SG_LIST, sges);
    NativeMemory.putInt(slot + OFF_DONE_STATUS, 0);
    if ((flags & SendRequests.INLINE) != 0 && !op.isAtomic() && op != WrOpcode.RDMA_READ) {
      long srcSges = NativeMemory.getLong(from + RequestLayout.OFF_SG_LIST);
      long total = RequestLayout.gatheredLength(srcSges, numSge);
      if (total > qp.caps.maxInlineData()) {
        throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which(i, from) + " has "
            + total + " bytes inline; the QP allows " + qp.caps.maxInlineData()
            + " (max_inline_data)");
      }
      long inline = sges + (long) qp.caps.maxSendSge() * RequestLayout.SGE_SIZE;
      long at = inline;
      for (int k = 0; k < numSge; k++) {
        long len = RequestLayout.sgeLength(srcSges, k);
        NativeMemory.copy(RequestLayout.sgeAddress(srcSges, k), at, len);
        at += len;
      }
      NativeMemory.putLong(sges, inline);
      NativeMemory.putInt(sges + 8, (int) total);
      NativeMemory.putInt(sges + 12, 0);
      NativeMemory.putInt(slot + RequestLayout.OFF_NUM_SGE, 1);
    } else if (numSge > 0) {
      NativeMemory.copy(NativeMemory.getLong(from + RequestLayout.OFF_SG_LIST), sges,
          (long) numSge * RequestLayout.SGE_SIZE);
    }
    tail++;
  }

  private String which(int i, long wr) {
    return "request " + i + " (wr_id " + NativeMemory.getLong(wr) + ") on " + qp.describe();
  }

  // ---------------------------------------------------------------- state changes (monitor)

  /** RTR to RTS: the retry counters start full. */
  void start() {
    timers.start();
  }

  void reset() {
    head = sent = tail = 0;
    timers.reset();
  }

  /** Every outstanding request completes WR_FLUSH_ERR (the QP is in ERR or SQE). */
  void flush() {
    timers.reset();
    while (head < tail) {
      long wr = slot(head);
      qp.sendCq.push(NativeMemory.getLong(wr + RequestLayout.OFF_WR_ID), WcStatus.WR_FLUSH_ERR,
          WcOpcode.forRequest(WrOpcode.of(NativeMemory.getInt(wr + RequestLayout.OFF_OPCODE))),
          0, 0, qp.qpn, 0, 0, false);
      head++;
    }
    sent = tail;
  }

  // ---------------------------------------------------------------- working the queue

  boolean markScheduled() {
    return scheduled.compareAndSet(false, true);
  }

  void clearScheduled() {
    scheduled.set(false);
  }

  /**
   * Works the send queue in this thread, up to {@code budget} requests, unless another thread
   * is at it: that one looks again when it is done, so nothing posted meanwhile waits.
   */
  void work(int budget) {
    if (!working.compareAndSet(false, true)) return;
    DeferredWork signals = DeferredWork.enter();
    try {
      run(budget);
    } catch (RuntimeException | Error e) {
      qp.engineFailure(e);
    } finally {
      working.set(false);
      signals.exit();
    }
    if (hasWork()) qp.schedule();
  }

  private boolean hasWork() {
    synchronized (qp) {
      SoftPeer p = qp.peer;
      return !qp.isClosed() && qp.state == QpState.RTS && !timers.paused() && sent != tail
          && (p == null || p.synchronous() || sent - head < MAX_IN_FLIGHT);
    }
  }

  private void run(int budget) {
    for (int n = 0; n < budget; n++) {
      long index;
      int psn;
      synchronized (qp) {
        SoftPeer p = qp.peer;
        if (qp.isClosed() || qp.state != QpState.RTS || timers.paused() || sent == tail) return;
        if (p != null && !p.synchronous() && sent - head >= MAX_IN_FLIGHT) return;
        index = sent++;
        psn = (int) ((qp.sqPsn + index) & 0xffffff);
        executing = true;
      }
      try {
        execute(index, psn);
      } finally {
        synchronized (qp) {
          executing = false;
          if (qp.isClosed()) free(); // close() left the slots to us
        }
      }
    }
  }

  private void execute(long index, int psn) {
    long wr = slot(index);
    WrOpcode op = WrOpcode.of(NativeMemory.getInt(wr + RequestLayout.OFF_OPCODE));
    int flags = NativeMemory.getInt(wr + RequestLayout.OFF_SEND_FLAGS);
    if (op == WrOpcode.BIND_MW) {
      int status = bindWindow(wr);
      complete(psn, status == OK ? WcStatus.SUCCESS : WcStatus.of(status), 0);
      return;
    }
    if (op == WrOpcode.LOCAL_INV) {
      Object o = qp.device.memoryKeys.get(NativeMemory.getInt(wr + RequestLayout.OFF_IMM_DATA));
      boolean ok = o instanceof SoftMw && ((SoftMw) o).type == MemoryWindow.Type.TYPE_2
          && ((SoftMw) o).pd == qp.pd;
      if (ok) ((SoftMw) o).invalidate();
      complete(psn, ok ? WcStatus.SUCCESS : WcStatus.LOC_PROT_ERR, 0);
      return;
    }
    boolean inline = (flags & SendRequests.INLINE) != 0;
    boolean writesLocal = op == WrOpcode.RDMA_READ || op.isAtomic();
    LocalUse use = writesLocal ? LocalUse.WRITE : inline ? LocalUse.INLINE : LocalUse.READ;
    int status = localSegments(wr, use, writesLocal ? local : gather);
    if (status != OK) {
      complete(psn, WcStatus.of(status), 0);
      return;
    }
    if (writesLocal) gather.clear();
    SoftPeer.RequestHeader h = header;
    h.srcQpn = qp.qpn;
    h.psn = psn;
    h.opcode = op.code;
    h.sendFlags = flags;
    h.immOrRkeyBigEndian = NativeMemory.getInt(wr + RequestLayout.OFF_IMM_DATA);
    h.payloadLength = gather.total();
    h.readLength = 0;
    qp.copyGid(h.srcGid);
    if (qp.type == QpType.UD) {
      sendDatagram(wr, psn, h);
      return;
    }
    SoftPeer p;
    synchronized (qp) {
      p = qp.route();
    }
    h.destQpn = qp.destQpn;
    h.remoteAddress = NativeMemory.getLong(wr + RequestLayout.OFF_REMOTE_ADDR);
    if (qp.type == QpType.UC) { // no acknowledgement: done once sent
      h.rkey = NativeMemory.getInt(wr + RequestLayout.OFF_RDMA_RKEY);
      if (gather.total() > qp.device.settings.maxMsgSize) {
        complete(psn, WcStatus.LOC_LEN_ERR, 0);
        return;
      }
      qp.device.portTally.packetsSent.increment();
      int sent = p.datagram(qp, h, gather);
      complete(psn, sent == SoftPeer.SOURCE_GONE ? WcStatus.LOC_PROT_ERR : WcStatus.SUCCESS,
          (int) gather.total());
      return;
    }
    if (op.isAtomic()) {
      h.rkey = NativeMemory.getInt(wr + RequestLayout.OFF_ATOMIC_RKEY);
      h.compareAdd = NativeMemory.getLong(wr + RequestLayout.OFF_COMPARE_ADD);
      h.swap = NativeMemory.getLong(wr + RequestLayout.OFF_SWAP);
      if (local.total() != 8) {
        complete(psn, WcStatus.LOC_LEN_ERR, 0);
        return;
      }
    } else {
      h.rkey = NativeMemory.getInt(wr + RequestLayout.OFF_RDMA_RKEY);
    }
    if (op == WrOpcode.RDMA_READ) h.readLength = local.total();
    long size = Math.max(gather.total(), op == WrOpcode.RDMA_READ ? local.total() : 0);
    if (size > qp.device.settings.maxMsgSize) {
      complete(psn, WcStatus.LOC_LEN_ERR, 0);
      return;
    }
    SoftPeer.Response r = response;
    if (!p.synchronous()) timers.arm();
    qp.device.portTally.packetsSent.increment(); // sent even if lost on the way, as a NIC's is
    int outcome = p.request(qp, h, gather, r);
    if (outcome == SoftPeer.SOURCE_GONE) {
      complete(psn, WcStatus.LOC_PROT_ERR, 0); // our memory was deregistered while it was sent
    } else if (outcome == SoftPeer.UNREACHABLE) {
      // lost on the way, as a packet would be: the transport timer retries, or gives up
    } else if (p.synchronous()) {
      onResponse(r, null, null);
    }
  }

  private void sendDatagram(long wr, int psn, SoftPeer.RequestHeader h) {
    if (gather.total() > qp.device.settings.mtu) {
      complete(psn, WcStatus.LOC_LEN_ERR, 0);
      return;
    }
    Object o = qp.device.handles.get((int) NativeMemory.getLong(wr + RequestLayout.OFF_UD_AH));
    if (!(o instanceof SoftAh) || ((SoftAh) o).pd != qp.pd) {
      complete(psn, WcStatus.LOC_QP_OP_ERR, 0);
      return;
    }
    SoftAh ah = (SoftAh) o;
    if (ah.peer == null) ah.peer = SoftFabric.get().route(ah.av.dgid());
    h.destQpn = NativeMemory.getInt(wr + RequestLayout.OFF_UD_REMOTE_QPN);
    h.dgid = ah.dgid;
    int wrQkey = NativeMemory.getInt(wr + RequestLayout.OFF_UD_REMOTE_QKEY);
    h.qkey = wrQkey < 0 ? qp.qkey : wrQkey; // a qkey with the high bit set means "use the QP's"
    qp.device.portTally.packetsSent.increment();
    int outcome = ah.peer.datagram(qp, h, gather);
    complete(psn, outcome == SoftPeer.SOURCE_GONE ? WcStatus.LOC_PROT_ERR : WcStatus.SUCCESS,
        (int) gather.total());
  }

  /** What a request does with its local segments. */
  private enum LocalUse {
    /** Reads bytes copied into the slot at posting: no key to check. */
    INLINE,
    /** Reads registered memory: each SGE's lkey and bounds checked. */
    READ,
    /** Writes registered memory (a READ's or an atomic's answer): LOCAL_WRITE checked too. */
    WRITE
  }

  /**
   * Builds the request's local segment list, checking each SGE's lkey, bounds and (when the
   * request writes local memory) LOCAL_WRITE. Returns OK or a WcStatus code.
   */
  private int localSegments(long wr, LocalUse use, Segments into) {
    into.clear();
    int n = NativeMemory.getInt(wr + RequestLayout.OFF_NUM_SGE);
    long sges = NativeMemory.getLong(wr + RequestLayout.OFF_SG_LIST);
    for (int k = 0; k < n; k++) {
      long addr = RequestLayout.sgeAddress(sges, k);
      long len = RequestLayout.sgeLength(sges, k);
      int lkey = RequestLayout.sgeLkey(sges, k);
      if (len > qp.device.settings.maxMsgSize) return WcStatus.LOC_LEN_ERR.code;
      if (use == LocalUse.INLINE) {
        into.add(addr, len); // copied into the slot at posting: the provider's memory
      } else if (!qp.grantLocal(lkey, addr, len, use == LocalUse.WRITE, into)) {
        return WcStatus.LOC_PROT_ERR.code;
      }
    }
    return OK;
  }

  private int bindWindow(long wr) {
    Object mwObj = qp.device.handles.get((int) NativeMemory.getLong(wr + RequestLayout.OFF_BIND_MW));
    Object mrObj = qp.device.handles.get((int) NativeMemory.getLong(wr + RequestLayout.OFF_BIND_MR));
    long addr = NativeMemory.getLong(wr + RequestLayout.OFF_BIND_ADDR);
    long len = NativeMemory.getLong(wr + RequestLayout.OFF_BIND_LENGTH);
    int acc = NativeMemory.getInt(wr + RequestLayout.OFF_BIND_ACCESS);
    int newRkey = NativeMemory.getInt(wr + RequestLayout.OFF_BIND_RKEY);
    if (!(mwObj instanceof SoftMw)) return WcStatus.MW_BIND_ERR.code;
    SoftMw mw = (SoftMw) mwObj;
    if (mw.pd != qp.pd || mw.isClosed()) return WcStatus.MW_BIND_ERR.code;
    if (len == 0) {
      mw.bind(newRkey, null, 0, 0, 0, qp);
      return OK;
    }
    if (!(mrObj instanceof SoftMr)) return WcStatus.MW_BIND_ERR.code;
    SoftMr mr = (SoftMr) mrObj;
    boolean ok = mr.pd == qp.pd && !mr.isClosed() && (mr.access() & Access.MW_BIND) != 0
        && mr.covers(addr, len)
        && ((acc & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) == 0
            || (mr.access() & Access.LOCAL_WRITE) != 0)
        && (newRkey >>> 8) == (mw.rkey() >>> 8)
        && (mw.type == MemoryWindow.Type.TYPE_1 || mw.region == null);
    if (!ok) return WcStatus.MW_BIND_ERR.code;
    mw.bind(newRkey, mr, addr, len, acc, qp);
    return OK;
  }

  // ---------------------------------------------------------------- completions (monitor)

  /**
   * Records the outcome of the request with {@code psn}; completions are then reported in
   * posting order, so a request finished locally waits for earlier ones still on the wire.
   */
  private void complete(int psn, WcStatus status, int byteLen) {
    synchronized (qp) {
      if (qp.state == QpState.ERR || qp.state == QpState.RESET) return;
      long index = head + ((psn - headPsn()) & 0xffffff);
      if (index >= sent) return;
      markDone(index, status, byteLen);
      drain();
    }
  }

  private void markDone(long index, WcStatus status, int byteLen) {
    long wr = slot(index);
    NativeMemory.putInt(wr + OFF_DONE_STATUS, status.code + 1);
    NativeMemory.putLong(wr + OFF_DONE_LENGTH, byteLen);
  }

  private void drain() {
    while (head < sent && qp.state != QpState.ERR && qp.state != QpState.RESET) {
      long wr = slot(head);
      int done = NativeMemory.getInt(wr + OFF_DONE_STATUS);
      if (done == 0) return;
      completeHead(WcStatus.of(done - 1), (int) NativeMemory.getLong(wr + OFF_DONE_LENGTH));
    }
  }

  private int headPsn() {
    return (int) ((qp.sqPsn + head) & 0xffffff);
  }

  /** Completes the oldest request; an error moves the QP to ERR (RC) or SQE and flushes. */
  void completeHead(WcStatus status, int byteLen) {
    long wr = slot(head);
    int flags = NativeMemory.getInt(wr + RequestLayout.OFF_SEND_FLAGS);
    WrOpcode op = WrOpcode.of(NativeMemory.getInt(wr + RequestLayout.OFF_OPCODE));
    // on error the state changes first: whoever polls the error completion sees the new state
    boolean failed = status != WcStatus.SUCCESS;
    if (failed) qp.state = qp.type == QpType.RC ? QpState.ERR : QpState.SQE;
    if (qp.signalAll || (flags & SendRequests.SIGNALED) != 0 || failed) {
      qp.sendCq.push(NativeMemory.getLong(wr + RequestLayout.OFF_WR_ID), status,
          WcOpcode.forRequest(op), byteLen, 0, qp.qpn, 0, 0, false);
    }
    head++;
    if (failed) {
      if (qp.state == QpState.ERR) qp.flushLocked(); // RC: everything
      else flush(); // UC, UD: the send queue only
      return;
    }
    qp.maybeRaiseDrainedLocked();
  }

  /** Fails the oldest outstanding request (if any) with {@code status}: the QP goes to ERR. */
  void failHead(WcStatus status) {
    if (head < tail) completeHead(status, 0);
  }

  // ---------------------------------------------------------------- responses

  /**
   * The responder's answer to a request: a stale one (already answered, or for a request that
   * is gone) is ignored. {@code readData} is where an RDMA READ's bytes come from: the
   * responder's memory (same JVM; {@code r.readSource}) or the rest of a fabric frame.
   * {@code via} is the link it came on (null in this JVM): one the QP has left since, by a reset
   * or a new address, answers a connection that is gone, so it is stale too.
   */
  void onResponse(SoftPeer.Response r, Payload readData, FabricLink via) {
    // DROPPED is no packet: the responder stayed silent (a peer in this JVM says so at once)
    if (r.code != SoftPeer.Response.DROPPED) qp.device.portTally.packetsReceived.increment();
    DeferredWork signals = DeferredWork.enter();
    try {
      take(r, readData, via);
    } finally {
      signals.exit();
    }
  }

  private void take(SoftPeer.Response r, Payload readData, FabricLink via) {
    long index;
    WrOpcode op;
    int generation;
    synchronized (qp) {
      index = outstanding(r.psn);
      boolean left = via != null && !via.holds(qp);
      if (left || index < 0 || (r.code != ACK && index != head)) {
        if (readData != null) readData.finish(); // stale: its bytes go nowhere
        return;
      }
      long wr = slot(index);
      op = WrOpcode.of(NativeMemory.getInt(wr + RequestLayout.OFF_OPCODE));
      if (readData != null) { // from another process: it carries what was asked, no more
        long expected = r.code == ACK && op == WrOpcode.RDMA_READ ? RequestLayout.requestLength(wr) : 0;
        if (readData.length() != expected) {
          throw new FabricWire.FabricViolation("it answered " + op + " (PSN " + r.psn + ") of QP "
              + qp.qpn + " with " + readData.length() + " bytes, where "
              + expected + " were asked");
        }
      }
      if (r.code != ACK) {
        settleNak(r, op);
        return;
      }
      generation = qp.fence.generation();
      if (op == WrOpcode.RDMA_READ || op.isAtomic()) {
        if (localSegments(wr, LocalUse.WRITE, answerTarget) != OK) {
          if (readData != null) readData.finish();
          completeHead(WcStatus.LOC_PROT_ERR, 0);
          return;
        }
      }
    }
    int len = 0;
    WcStatus status = WcStatus.SUCCESS;
    if (op == WrOpcode.RDMA_READ) {
      // placed outside the monitor: the owner posts and polls meanwhile, as with a NIC
      int copied = readData != null
          ? readData.copyTo(answerTarget, 0, r.readLength, qp.fence, generation)
          : Segments.copy(r.readSource, 0, answerTarget, 0, r.readLength, qp.fence, generation);
      boolean whole = readData == null || readData.finish();
      if (copied == Segments.SOURCE_GONE || !whole) {
        status = WcStatus.REM_ACCESS_ERR;
        qp.noteError(qp.describePeer() + " could not finish its answer to RDMA READ (PSN "
            + r.psn + "): the memory it read was deregistered meanwhile");
      } else if (copied != Segments.COPIED) {
        status = WcStatus.LOC_PROT_ERR;
      }
      len = (int) r.readLength;
    } else if (op.isAtomic()) {
      if (!answerTarget.enter(0)) {
        status = WcStatus.LOC_PROT_ERR;
      } else {
        try {
          NativeMemory.putLong(answerTarget.address(0), r.atomicValue);
        } finally {
          answerTarget.exit(0);
        }
      }
      len = 8;
    }
    synchronized (qp) {
      if (qp.fence.generation() != generation || outstanding(r.psn) != index) return;
      if (op != WrOpcode.RDMA_READ && !op.isAtomic()) len = (int) RequestLayout.requestLength(slot(index));
      if (status == WcStatus.SUCCESS) timers.progress();
      markDone(index, status, status == WcStatus.SUCCESS ? len : 0);
      drain();
      if (!timers.paused() && sent != tail && qp.state == QpState.RTS) qp.schedule();
    }
  }

  // ---------------------------------------------------------------- for the timers (monitor)

  /** Whether requests are posted and not completed, sent or not. */
  boolean unanswered() {
    return head < tail;
  }

  /** Whether only the head is out unanswered (the timer starts from it). */
  boolean firstOut() {
    return head == sent - 1;
  }

  /** Goes back to the oldest unanswered request: the peer answers repeats again. */
  void rewind() {
    sent = head;
  }

  /** The slot index of the outstanding request with {@code psn}, or -1. */
  long outstanding(int psn) {
    if (qp.isClosed() || qp.state == QpState.ERR || qp.state == QpState.RESET || head == sent) {
      return -1;
    }
    long index = head + ((psn - headPsn()) & 0xffffff);
    return index < sent ? index : -1;
  }

  private void settleNak(SoftPeer.Response r, WrOpcode op) {
    switch (r.code) {
      case RNR_NAK:
        qp.device.portTally.rnrNaksReceived.increment();
        if (!timers.rnrRetry(r.rnrTimer)) {
          qp.device.portTally.rnrRetriesExceeded.increment();
          qp.noteError(qp.describePeer() + " had no receive posted for " + op + " after "
              + qp.rnrRetry + " RNR retries");
          completeHead(WcStatus.RNR_RETRY_EXC_ERR, 0);
        }
        break;
      case NAK_INVALID_REQUEST:
        qp.noteError(qp.describePeer() + " refused " + op + " as an invalid request");
        completeHead(WcStatus.REM_INV_REQ_ERR, 0);
        break;
      case NAK_REMOTE_ACCESS:
        qp.noteError(qp.describePeer() + " refused " + op + ": its rkey, address or length is"
            + " outside what the peer registered");
        completeHead(WcStatus.REM_ACCESS_ERR, 0);
        break;
      case NAK_REMOTE_OPERATION:
        qp.noteError(qp.describePeer() + " could not complete " + op);
        completeHead(WcStatus.REM_OP_ERR, 0);
        break;
      default: // DROPPED: nobody answers; the transport timer decides
        timers.lost();
        break;
    }
  }

  // ---------------------------------------------------------------- memory

  private long slot(long index) {
    return memory.address() + (index % capacity) * slotSize;
  }

  /** At the QP's destruction (monitor held): the slots go now, or after the request in work. */
  void close() {
    timers.reset();
    if (!executing) free();
  }

  private void free() {
    if (freed) return;
    freed = true;
    memory.close();
  }
}
