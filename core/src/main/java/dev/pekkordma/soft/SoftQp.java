package dev.pekkordma.soft;

import static dev.pekkordma.soft.SoftPeer.Response.ACK;
import static dev.pekkordma.soft.SoftPeer.Response.DROPPED;
import static dev.pekkordma.soft.SoftPeer.Response.NAK_INVALID_REQUEST;
import static dev.pekkordma.soft.SoftPeer.Response.NAK_REMOTE_ACCESS;
import static dev.pekkordma.soft.SoftPeer.Response.NAK_REMOTE_OPERATION;
import static dev.pekkordma.soft.SoftPeer.Response.RNR_NAK;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpCapabilities;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpStateMachine;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A software queue pair: the requester (its send queue, worked by the device engine) and the
 * responder (called by peers' requests). A QP never holds its own lock while calling into another
 * QP, so traffic in both directions cannot deadlock.
 */
final class SoftQp extends Closeable implements QueuePair {
  private static final int OK = -1;
  private static final int GRH_BYTES = 40;
  /** Requests on the wire before an answer, for peers in other processes. */
  private static final int MAX_IN_FLIGHT = 64;
  /** The most requests one post runs in the poster's thread (see postSend). */
  private static final int INLINE_MAX = 4;
  /** IB's RNR timer encoding, in microseconds (index = min_rnr_timer). */
  private static final long[] RNR_MICROS = {655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320,
      480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440,
      81920, 122880, 163840, 245760, 327680, 491520};

  final SoftPd pd;
  final SoftDevice device;
  final SoftContext context;
  final QpType type;
  final int qpn;
  final SoftCq sendCq;
  final SoftCq recvCq;
  final SoftSrq srq;
  final boolean signalAll;
  final QpCapabilities caps;

  // attributes (guarded by this)
  private volatile QpState state = QpState.RESET;
  private int port = 1;
  private int accessFlags;
  private int qkey;
  private int pkeyIndex;
  private AddressVector av;
  private Mtu pathMtu = Mtu.MTU_1024;
  private int destQpn;
  private int rqPsn;
  private int sqPsn;
  private int timeout;
  private int retryCount;
  private int rnrRetry;
  private int minRnrTimer;
  private int maxRdAtomic;
  private int maxDestRdAtomic;
  private boolean sqdNotify;
  private boolean sqDrainedRaised;

  // send queue
  private final OffHeapBuffer sqMemory;
  private final int sqSlotSize;
  private final int sqCapacity;
  private long sqHead; // oldest not completed
  private long sqSent; // next to start
  private long sqTail; // next free
  private int retryLeft;
  private int rnrLeft;
  private boolean paused;
  private int pauseGeneration;
  private SoftPeer peer;
  private final AtomicBoolean scheduled = new AtomicBoolean();
  /** Held by whoever works the send queue, the engine or a poster: one at a time. */
  private final AtomicBoolean working = new AtomicBoolean();

  // receive queue (unless an SRQ is used)
  private final ReceiveRing rq;

  // responder
  private int epsn;
  private boolean commEstablished;

  // reused by the engine thread (requester) and under the lock (responder)
  private final SoftPeer.RequestHeader header = new SoftPeer.RequestHeader();
  private final SoftPeer.Response response = new SoftPeer.Response();
  private final Segments gather;
  private final Segments local;
  private final Segments target = new Segments(1);
  private final Segments placed = new Segments(1); // the responder's, outside the lock
  private int responding; // writes being placed outside the lock; close() waits for them
  private int resets; // a write placed across a reset belongs to the connection before it
  private final Segments scatter;
  private final byte[] grhBuffer = new byte[GRH_BYTES];

  private SoftQp(SoftPd pd, QpInitAttributes a, QpCapabilities caps) {
    this.pd = pd;
    this.device = pd.device;
    this.context = pd.context;
    this.type = a.type();
    this.sendCq = (SoftCq) a.sendCq();
    this.recvCq = (SoftCq) a.recvCq();
    this.srq = (SoftSrq) a.srq();
    this.signalAll = a.signalAll();
    this.caps = caps;
    this.sqCapacity = caps.maxSendWr();
    this.sqSlotSize = SendRequests.WR_SIZE + caps.maxSendSge() * SendRequests.SGE_SIZE
        + ((caps.maxInlineData() + 7) & ~7);
    this.sqMemory = OffHeapBuffer.allocate((long) sqCapacity * sqSlotSize);
    this.rq = srq == null ? new ReceiveRing(caps.maxRecvWr(), caps.maxRecvSge()) : null;
    this.gather = new Segments(caps.maxSendSge());
    this.local = new Segments(caps.maxSendSge());
    this.scatter = new Segments(srq != null ? srq.ring.maxSge() : caps.maxRecvSge());
    this.qpn = device.qps.add(this);
  }

  static SoftQp create(SoftPd pd, QpInitAttributes a) {
    a.validate(pd.device.attributes());
    if (!(a.sendCq() instanceof SoftCq) || !(a.recvCq() instanceof SoftCq)) {
      throw new RdmaException("ibv_create_qp", RdmaException.EINVAL,
          "send and receive CQs must come from this provider");
    }
    SoftCq scq = (SoftCq) a.sendCq();
    SoftCq rcq = (SoftCq) a.recvCq();
    scq.checkOpen("ibv_create_qp");
    rcq.checkOpen("ibv_create_qp");
    if (scq.context.device != pd.device || rcq.context.device != pd.device) {
      throw new RdmaException("ibv_create_qp", RdmaException.EINVAL,
          "the CQs belong to another device than the PD");
    }
    if (a.srq() != null) {
      if (!(a.srq() instanceof SoftSrq) || ((SoftSrq) a.srq()).pd != pd) {
        throw new RdmaException("ibv_create_qp", RdmaException.EINVAL,
            "the SRQ belongs to another protection domain");
      }
      ((SoftSrq) a.srq()).checkOpen("ibv_create_qp");
      if (a.type() == QpType.UD || a.type() == QpType.UC) {
        // verbs allow it; keep the models simple and say so
      }
    }
    QpCapabilities caps = new QpCapabilities(a.maxSendWr(), a.srq() == null ? a.maxRecvWr() : 0,
        a.maxSendSge(), a.srq() == null ? a.maxRecvSge() : 0, a.maxInlineData());
    SoftQp qp = new SoftQp(pd, a, caps);
    scq.users.incrementAndGet();
    rcq.users.incrementAndGet();
    if (qp.srq != null) qp.srq.users.incrementAndGet();
    pd.context.qps.add(qp);
    return qp;
  }

  @Override
  String describe() {
    return type + " QP " + qpn;
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public int qpNum() { return qpn; }
  @Override public QpType type() { return type; }
  @Override public QpState state() { return state; }
  @Override public QpCapabilities capabilities() { return caps; }

  // ---------------------------------------------------------------- modify and query

  @Override
  public QpAttributes query() {
    checkOpen("ibv_query_qp");
    synchronized (this) {
      QpAttributes q = new QpAttributes().state(state).currentState(state).port(port)
          .pkeyIndex(pkeyIndex).pathMtu(pathMtu).timeout(timeout).retryCount(retryCount)
          .rnrRetry(rnrRetry).rqPsn(rqPsn).sqPsn(sqPsn).maxRdAtomic(maxRdAtomic)
          .maxDestRdAtomic(maxDestRdAtomic).minRnrTimer(minRnrTimer).destQpNum(destQpn)
          .sqdAsyncNotify(sqdNotify);
      if (type == QpType.UD) q.qkey(qkey); else q.accessFlags(accessFlags);
      if (av != null) q.addressVector(av);
      return q;
    }
  }

  @Override
  public void modify(QpAttributes a) {
    checkOpen("ibv_modify_qp");
    if (a == null) throw new RdmaException("ibv_modify_qp", RdmaException.EINVAL, "attributes are null");
    boolean schedule = false;
    synchronized (this) {
      QpState from = state;
      QpStateMachine.check(qpn, type, from, a);
      validateValues(a);
      QpState to = a.has(QpAttributes.STATE) ? a.state() : from;
      if (a.has(QpAttributes.PORT)) port = a.port();
      if (a.has(QpAttributes.ACCESS_FLAGS)) accessFlags = a.accessFlags();
      if (a.has(QpAttributes.QKEY)) qkey = a.qkey();
      if (a.has(QpAttributes.PKEY_INDEX)) pkeyIndex = a.pkeyIndex();
      if (a.has(QpAttributes.AV)) { av = a.addressVector(); peer = null; }
      if (a.has(QpAttributes.PATH_MTU)) pathMtu = a.pathMtu();
      if (a.has(QpAttributes.DEST_QPN)) destQpn = a.destQpNum();
      if (a.has(QpAttributes.RQ_PSN)) rqPsn = a.rqPsn() & 0xffffff;
      if (a.has(QpAttributes.SQ_PSN)) sqPsn = a.sqPsn() & 0xffffff;
      if (a.has(QpAttributes.TIMEOUT)) timeout = a.timeout();
      if (a.has(QpAttributes.RETRY_CNT)) retryCount = a.retryCount();
      if (a.has(QpAttributes.RNR_RETRY)) rnrRetry = a.rnrRetry();
      if (a.has(QpAttributes.MIN_RNR_TIMER)) minRnrTimer = a.minRnrTimer();
      if (a.has(QpAttributes.MAX_QP_RD_ATOMIC)) maxRdAtomic = a.maxRdAtomic();
      if (a.has(QpAttributes.MAX_DEST_RD_ATOMIC)) maxDestRdAtomic = a.maxDestRdAtomic();
      if (a.has(QpAttributes.EN_SQD_ASYNC_NOTIFY)) sqdNotify = a.sqdAsyncNotify();
      switch (to) {
        case RESET:
          resetLocked();
          break;
        case ERR:
          if (from != QpState.ERR) {
            state = QpState.ERR;
            flushLocked();
          }
          break;
        case RTR:
          if (from == QpState.INIT) {
            epsn = rqPsn;
            commEstablished = false;
          }
          state = to;
          break;
        case RTS:
          if (from == QpState.RTR) {
            retryLeft = retryCount;
            rnrLeft = rnrRetry;
          }
          state = to;
          schedule = sqTail != sqSent;
          break;
        case SQD:
          state = to;
          if (from != QpState.SQD) sqDrainedRaised = false; // SQD -> SQD drains nothing new
          maybeRaiseDrainedLocked();
          break;
        default:
          state = to;
      }
    }
    if (schedule) device.engine.schedule(this);
  }

  private void validateValues(QpAttributes a) {
    if (a.has(QpAttributes.PORT) && a.port() != 1) {
      throw invalidAttr("port " + a.port() + " does not exist (the device has port 1)");
    }
    if (a.has(QpAttributes.ACCESS_FLAGS)) {
      int acc = a.accessFlags();
      if ((acc & ~(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
          | Access.REMOTE_ATOMIC | Access.MW_BIND)) != 0) {
        throw invalidAttr("unknown access bits in 0x" + Integer.toHexString(acc));
      }
    }
    if (a.has(QpAttributes.PKEY_INDEX) && a.pkeyIndex() != 0) {
      throw invalidAttr("pkey index " + a.pkeyIndex() + " is outside the table of 1 entry");
    }
    if (a.has(QpAttributes.PATH_MTU) && a.pathMtu().bytes > device.settings.mtu) {
      throw invalidAttr("path MTU " + a.pathMtu().bytes + " exceeds the port's "
          + device.settings.mtu);
    }
    if (a.has(QpAttributes.AV)) {
      AddressVector v = a.addressVector();
      if (v == null) throw invalidAttr("address vector is null");
      if (!v.global() || v.dgid() == null) {
        throw invalidAttr("the link layer is Ethernet (RoCE): the address vector needs "
            + "global=true and a destination GID");
      }
      if (v.sgidIndex() != 0) {
        throw invalidAttr("source GID index " + v.sgidIndex() + " is outside the table of 1 entry");
      }
    }
    if (a.has(QpAttributes.TIMEOUT) && (a.timeout() < 0 || a.timeout() > 31)) {
      throw invalidAttr("timeout " + a.timeout() + " is outside [0, 31]");
    }
    if (a.has(QpAttributes.RETRY_CNT) && (a.retryCount() < 0 || a.retryCount() > 7)) {
      throw invalidAttr("retry count " + a.retryCount() + " is outside [0, 7]");
    }
    if (a.has(QpAttributes.RNR_RETRY) && (a.rnrRetry() < 0 || a.rnrRetry() > 7)) {
      throw invalidAttr("RNR retry " + a.rnrRetry() + " is outside [0, 7] (7 means forever)");
    }
    if (a.has(QpAttributes.MIN_RNR_TIMER) && (a.minRnrTimer() < 0 || a.minRnrTimer() > 31)) {
      throw invalidAttr("min RNR timer " + a.minRnrTimer() + " is outside [0, 31]");
    }
    int maxRd = device.settings.maxQpRdAtom;
    if (a.has(QpAttributes.MAX_QP_RD_ATOMIC) && (a.maxRdAtomic() < 0 || a.maxRdAtomic() > maxRd)) {
      throw invalidAttr("max_rd_atomic " + a.maxRdAtomic() + " is outside [0, " + maxRd + "]");
    }
    if (a.has(QpAttributes.MAX_DEST_RD_ATOMIC)
        && (a.maxDestRdAtomic() < 0 || a.maxDestRdAtomic() > maxRd)) {
      throw invalidAttr("max_dest_rd_atomic " + a.maxDestRdAtomic() + " is outside [0, " + maxRd + "]");
    }
    if (a.has(QpAttributes.DEST_QPN) && (a.destQpNum() & ~0xffffff) != 0) {
      throw invalidAttr("dest QPN 0x" + Integer.toHexString(a.destQpNum()) + " exceeds 24 bits");
    }
  }

  private RdmaException invalidAttr(String why) {
    return new RdmaException("ibv_modify_qp", RdmaException.EINVAL, describe() + ": " + why);
  }

  private void resetLocked() {
    state = QpState.RESET;
    resets++;
    sqHead = sqSent = sqTail = 0;
    if (rq != null) rq.clear();
    paused = false;
    pauseGeneration++;
    commEstablished = false;
    peer = null;
  }

  /** Flushes every outstanding send and receive with WR_FLUSH_ERR (the QP is in ERR). */
  private void flushLocked() {
    paused = false;
    pauseGeneration++;
    flushSendQueueLocked();
    if (rq != null) {
      while (!rq.isEmpty()) {
        recvCq.push(rq.headWrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, qpn, 0, 0, false);
        rq.pop();
      }
    } else {
      context.raise(AsyncEvent.ofQp(AsyncEventType.QP_LAST_WQE_REACHED, this));
    }
  }

  private void toErrorLocked() {
    if (state == QpState.ERR || state == QpState.RESET) return;
    state = QpState.ERR;
    flushLocked();
  }

  /** An internal error (injected, or the device died): QP_FATAL and the error state. */
  void fatal(Throwable cause) {
    synchronized (this) {
      if (isClosed() || state == QpState.RESET || state == QpState.ERR) return;
      toErrorLocked();
    }
    context.raise(AsyncEvent.ofQp(AsyncEventType.QP_FATAL, this));
  }

  void engineFailure(Throwable e) {
    System.err.println("soft-rdma: " + describe() + " failed in the engine: " + e);
    e.printStackTrace();
    fatal(e);
  }

  private void maybeRaiseDrainedLocked() {
    if (state == QpState.SQD && sqdNotify && !sqDrainedRaised && sqHead == sqSent) {
      sqDrainedRaised = true;
      context.raise(AsyncEvent.ofQp(AsyncEventType.SQ_DRAINED, this));
    }
  }

  // ---------------------------------------------------------------- posting

  @Override
  public void postSend(SendRequests requests) {
    checkOpen("ibv_post_send");
    if (requests == null) throw new RdmaException("ibv_post_send", RdmaException.EINVAL, "requests are null");
    boolean schedule;
    boolean here;
    synchronized (this) {
      QpState s = state;
      if (s == QpState.RESET || s == QpState.INIT || s == QpState.RTR) {
        throw new RdmaException("ibv_post_send", RdmaException.EINVAL, describe() + " is in "
            + s + ": sends need RTS (or SQD, SQE, ERR)");
      }
      // a few requests on an idle queue run here; a big batch goes to the engine so that the
      // poster goes on (polling, preparing the next) while the engine copies: two threads
      here = peer != null && peer.synchronous() && requests.size() <= INLINE_MAX
          && sqSent == sqTail;
      long before = sqTail;
      try {
        for (int i = 0; i < requests.size(); i++) {
          enqueueSend(requests, i);
        }
      } finally {
        if (s == QpState.ERR) flushLocked();
        else if (s == QpState.SQE) flushSendQueueLocked(); // receives still work in SQE
        schedule = s == QpState.RTS && sqTail != before;
      }
    }
    if (!schedule) return;
    if (here) {
      work(SoftEngine.BATCH); // the peer is in this JVM: as rxe does, run it in the caller
    } else {
      device.engine.schedule(this);
    }
  }

  private void enqueueSend(SendRequests r, int i) {
    long from = r.requestAddress(i);
    WrOpcode op = WrOpcode.of(NativeMemory.getInt(from + SendRequests.OFF_OPCODE));
    int flags = NativeMemory.getInt(from + SendRequests.OFF_SEND_FLAGS);
    int numSge = NativeMemory.getInt(from + SendRequests.OFF_NUM_SGE);
    if (!opcodeAllowed(op)) {
      throw new RdmaException("ibv_post_send", RdmaException.EINVAL,
          which(i, from) + ": opcode " + op + " is not supported on " + type + " QPs");
    }
    if (numSge > caps.maxSendSge()) {
      throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which(i, from) + " has "
          + numSge + " SGEs; the QP takes at most " + caps.maxSendSge() + " (max_send_sge)");
    }
    if (sqTail - sqHead >= sqCapacity) {
      throw new RdmaException("ibv_post_send", RdmaException.ENOMEM, which(i, from)
          + ": the send queue already holds " + sqCapacity
          + " outstanding requests (max_send_wr)");
    }
    long slot = sqSlot(sqTail);
    NativeMemory.copy(from, slot, SendRequests.WR_SIZE);
    long sges = slot + SendRequests.WR_SIZE;
    NativeMemory.putLong(slot + SendRequests.OFF_SG_LIST, sges);
    NativeMemory.putInt(slot + OFF_DONE_STATUS, 0);
    if ((flags & SendRequests.INLINE) != 0 && !op.isAtomic() && op != WrOpcode.RDMA_READ) {
      long srcSges = NativeMemory.getLong(from + SendRequests.OFF_SG_LIST);
      long total = 0;
      for (int k = 0; k < numSge; k++) total += NativeMemory.getInt(srcSges + k * 16L + 8);
      if (total > caps.maxInlineData()) {
        throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which(i, from) + " has "
            + total + " bytes inline; the QP allows " + caps.maxInlineData() + " (max_inline_data)");
      }
      long inline = sges + (long) caps.maxSendSge() * SendRequests.SGE_SIZE;
      long at = inline;
      for (int k = 0; k < numSge; k++) {
        int len = NativeMemory.getInt(srcSges + k * 16L + 8);
        NativeMemory.copy(NativeMemory.getLong(srcSges + k * 16L), at, len);
        at += len;
      }
      NativeMemory.putLong(sges, inline);
      NativeMemory.putInt(sges + 8, (int) total);
      NativeMemory.putInt(sges + 12, 0);
      NativeMemory.putInt(slot + SendRequests.OFF_NUM_SGE, 1);
    } else if (numSge > 0) {
      NativeMemory.copy(NativeMemory.getLong(from + SendRequests.OFF_SG_LIST), sges,
          (long) numSge * SendRequests.SGE_SIZE);
    }
    sqTail++;
  }

  /** Names request {@code i} in an error message (built only when something is wrong). */
  private String which(int i, long wr) {
    return "request " + i + " (wr_id " + NativeMemory.getLong(wr) + ") on " + describe();
  }

  private boolean opcodeAllowed(WrOpcode op) {
    switch (type) {
      case UD: return op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM;
      case UC: return op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM
          || op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_WRITE_WITH_IMM
          || op == WrOpcode.BIND_MW || op == WrOpcode.LOCAL_INV;
      default: return true;
    }
  }

  @Override
  public void postRecv(RecvRequests requests) {
    checkOpen("ibv_post_recv");
    if (requests == null) throw new RdmaException("ibv_post_recv", RdmaException.EINVAL, "requests are null");
    synchronized (this) {
      if (rq == null) {
        throw new RdmaException("ibv_post_recv", RdmaException.EINVAL,
            describe() + " uses an SRQ: post receives to the SRQ");
      }
      if (state == QpState.RESET) {
        throw new RdmaException("ibv_post_recv", RdmaException.EINVAL,
            describe() + " is in RESET: receives need INIT or later");
      }
      for (int i = 0; i < requests.size(); i++) {
        int n = requests.numSge(i);
        if (n > rq.maxSge()) {
          throw new RdmaException("ibv_post_recv", RdmaException.EINVAL,
              which(i, requests.requestAddress(i)) + " has " + n
                  + " SGEs; the QP takes at most " + rq.maxSge() + " (max_recv_sge)");
        }
        if (rq.isFull()) {
          throw new RdmaException("ibv_post_recv", RdmaException.ENOMEM,
              which(i, requests.requestAddress(i)) + ": the receive queue already holds "
                  + rq.capacity() + " receives (max_recv_wr)");
        }
        rq.push(requests, i);
      }
      if (state == QpState.ERR) flushLocked();
    }
  }

  @Override
  public int bindMemoryWindow(MemoryWindow mw, long wrId, int sendFlags, MemoryRegion mr,
      long address, long length, int access) {
    checkOpen("ibv_bind_mw");
    if (!(mw instanceof SoftMw)) {
      throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL, "not a window of this provider: " + mw);
    }
    SoftMw w = (SoftMw) mw;
    w.checkOpen("ibv_bind_mw");
    if (w.type != MemoryWindow.Type.TYPE_1) throw SoftMw.notType1(w);
    if (length < 0) {
      throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL, "length " + length + " is negative");
    }
    int newRkey = MemoryWindow.nextRkey(w.rkey());
    try (SendRequests one = new SendRequests(1, 1)) {
      one.add(wrId, WrOpcode.BIND_MW, sendFlags).bindMw(mw, newRkey, mr, address, length, access);
      postSend(one);
    }
    return newRkey;
  }

  // ---------------------------------------------------------------- requester (engine thread)

  boolean markScheduled() {
    return scheduled.compareAndSet(false, true);
  }

  void clearScheduled() {
    scheduled.set(false);
  }

  /**
   * Works the send queue in this thread, up to {@code budget} requests, unless another thread
   * is at it: that one looks again when it is done (below), so nothing posted meanwhile waits.
   * What is left goes to the engine. A poster of a QP whose peer is in this JVM saves the
   * engine's wake-up and a copy from a cold cache; the engine stays for what is left, retries
   * and remote peers.
   */
  void work(int budget) {
    if (!working.compareAndSet(false, true)) return;
    DeferredSignals signals = DeferredSignals.enter();
    try {
      runSendQueue(budget);
    } catch (RuntimeException | Error e) {
      engineFailure(e);
    } finally {
      working.set(false);
      signals.exit();
    }
    if (hasWork()) device.engine.schedule(this);
  }

  /** Whether a request could start now (runSendQueue's conditions; a full window waits). */
  private synchronized boolean hasWork() {
    return !isClosed() && state == QpState.RTS && !paused && sqSent != sqTail
        && (peer == null || peer.synchronous() || sqSent - sqHead < MAX_IN_FLIGHT);
  }

  /** Starts up to {@code budget} requests; true when more could start now. */
  private boolean runSendQueue(int budget) {
    for (int n = 0; n < budget; n++) {
      long index;
      int psn;
      synchronized (this) {
        if (isClosed() || state != QpState.RTS || paused || sqSent == sqTail) return false;
        if (peer != null && !peer.synchronous() && sqSent - sqHead >= MAX_IN_FLIGHT) return false;
        index = sqSent++;
        psn = (int) ((sqPsn + index) & 0xffffff);
        executing = true;
      }
      try {
        execute(index, psn);
      } finally {
        synchronized (this) {
          executing = false;
          if (isClosed()) freeQueuesLocked(); // close() left them to us
        }
      }
    }
    return true;
  }

  private void execute(long index, int psn) {
    long wr = sqSlot(index);
    WrOpcode op = WrOpcode.of(NativeMemory.getInt(wr + SendRequests.OFF_OPCODE));
    int flags = NativeMemory.getInt(wr + SendRequests.OFF_SEND_FLAGS);
    if (op == WrOpcode.BIND_MW) {
      int status = bindWindow(wr);
      complete(psn, status == OK ? WcStatus.SUCCESS : WcStatus.of(status), 0);
      return;
    }
    if (op == WrOpcode.LOCAL_INV) {
      Object o = device.memoryKeys.get(NativeMemory.getInt(wr + SendRequests.OFF_IMM_DATA));
      boolean ok = o instanceof SoftMw && ((SoftMw) o).type == MemoryWindow.Type.TYPE_2
          && ((SoftMw) o).pd == pd;
      if (ok) ((SoftMw) o).invalidate();
      complete(psn, ok ? WcStatus.SUCCESS : WcStatus.LOC_PROT_ERR, 0);
      return;
    }
    boolean inline = (flags & SendRequests.INLINE) != 0;
    boolean writesLocal = op == WrOpcode.RDMA_READ || op.isAtomic();
    int status = localSegments(wr, inline && !writesLocal, writesLocal, writesLocal ? local : gather);
    if (status != OK) {
      complete(psn, WcStatus.of(status), 0);
      return;
    }
    SoftPeer.RequestHeader h = header;
    h.srcQpn = qpn;
    h.psn = psn;
    h.opcode = op.code;
    h.sendFlags = flags;
    h.immOrRkeyBigEndian = NativeMemory.getInt(wr + SendRequests.OFF_IMM_DATA);
    if (type == QpType.UD) {
      if (gather.total() > device.settings.mtu) {
        complete(psn, WcStatus.LOC_LEN_ERR, 0);
        return;
      }
      Object o = device.handles.get((int) NativeMemory.getLong(wr + SendRequests.OFF_UD_AH));
      if (!(o instanceof SoftAh) || ((SoftAh) o).pd != pd) {
        complete(psn, WcStatus.LOC_QP_OP_ERR, 0);
        return;
      }
      SoftAh ah = (SoftAh) o;
      if (ah.peer == null) ah.peer = SoftFabric.get().route(ah.av.dgid());
      h.destQpn = NativeMemory.getInt(wr + SendRequests.OFF_UD_REMOTE_QPN);
      int wrQkey = NativeMemory.getInt(wr + SendRequests.OFF_UD_REMOTE_QKEY);
      h.qkey = wrQkey < 0 ? qkey : wrQkey; // a qkey with the high bit set means "use the QP's"
      copyGid(h);
      ah.peer.datagram(this, h, gather);
      complete(psn, WcStatus.SUCCESS, (int) gather.total());
      return;
    }
    SoftPeer p;
    synchronized (this) {
      if (peer == null) peer = SoftFabric.get().route(av.dgid());
      p = peer;
    }
    h.destQpn = destQpn;
    copyGid(h);
    h.remoteAddress = NativeMemory.getLong(wr + SendRequests.OFF_REMOTE_ADDR);
    if (type == QpType.UC) { // no acknowledgement: done once sent
      h.rkey = NativeMemory.getInt(wr + SendRequests.OFF_RDMA_RKEY);
      p.datagram(this, h, gather);
      complete(psn, WcStatus.SUCCESS, (int) gather.total());
      return;
    }
    if (op.isAtomic()) {
      h.rkey = NativeMemory.getInt(wr + SendRequests.OFF_ATOMIC_RKEY);
      h.compareAdd = NativeMemory.getLong(wr + SendRequests.OFF_COMPARE_ADD);
      h.swap = NativeMemory.getLong(wr + SendRequests.OFF_SWAP);
      if (local.total() != 8) {
        complete(psn, WcStatus.LOC_LEN_ERR, 0);
        return;
      }
    } else {
      h.rkey = NativeMemory.getInt(wr + SendRequests.OFF_RDMA_RKEY);
    }
    h.readLength = op == WrOpcode.RDMA_READ ? (int) local.total() : 0;
    if (gather.total() > device.settings.maxMsgSize || local.total() > device.settings.maxMsgSize) {
      complete(psn, WcStatus.LOC_LEN_ERR, 0);
      return;
    }
    Segments payload = writesLocal ? gather.clear() : gather;
    SoftPeer.Response r = response;
    p.request(this, h, payload, r);
    if (p.synchronous()) onResponse(r);
  }

  private void copyGid(SoftPeer.RequestHeader h) {
    for (int i = 0; i < 16; i++) h.srcGid[i] = device.gid.byteAt(i);
  }

  /**
   * Builds the request's local segment list, checking each SGE's lkey, bounds and (when the
   * request writes local memory) LOCAL_WRITE. Returns OK or a WcStatus code.
   */
  private int localSegments(long wr, boolean inline, boolean needWrite, Segments into) {
    into.clear();
    int n = NativeMemory.getInt(wr + SendRequests.OFF_NUM_SGE);
    long sges = NativeMemory.getLong(wr + SendRequests.OFF_SG_LIST);
    for (int k = 0; k < n; k++) {
      long addr = NativeMemory.getLong(sges + k * 16L);
      int len = NativeMemory.getInt(sges + k * 16L + 8);
      int lkey = NativeMemory.getInt(sges + k * 16L + 12);
      if (len < 0) return WcStatus.LOC_LEN_ERR.code;
      if (!inline && !checkLocal(lkey, addr, len, needWrite)) return WcStatus.LOC_PROT_ERR.code;
      if (len > 0) into.add(addr, len);
    }
    return OK;
  }

  private boolean checkLocal(int lkey, long addr, int len, boolean needWrite) {
    Object o = device.memoryKeys.get(lkey);
    if (!(o instanceof SoftMr)) return false;
    SoftMr mr = (SoftMr) o;
    if (mr.pd != pd || !mr.covers(addr, len)) return false;
    return !needWrite || (mr.access() & Access.LOCAL_WRITE) != 0;
  }

  private int bindWindow(long wr) {
    Object mwObj = device.handles.get((int) NativeMemory.getLong(wr + SendRequests.OFF_BIND_MW));
    Object mrObj = device.handles.get((int) NativeMemory.getLong(wr + SendRequests.OFF_BIND_MR));
    long addr = NativeMemory.getLong(wr + SendRequests.OFF_BIND_ADDR);
    long len = NativeMemory.getLong(wr + SendRequests.OFF_BIND_LENGTH);
    int acc = NativeMemory.getInt(wr + SendRequests.OFF_BIND_ACCESS);
    int newRkey = NativeMemory.getInt(wr + SendRequests.OFF_BIND_RKEY);
    if (!(mwObj instanceof SoftMw)) return WcStatus.MW_BIND_ERR.code;
    SoftMw mw = (SoftMw) mwObj;
    if (mw.pd != pd || mw.isClosed()) return WcStatus.MW_BIND_ERR.code;
    if (len == 0) {
      mw.bind(newRkey, null, 0, 0, 0, this);
      return OK;
    }
    if (!(mrObj instanceof SoftMr)) return WcStatus.MW_BIND_ERR.code;
    SoftMr mr = (SoftMr) mrObj;
    boolean ok = mr.pd == pd && !mr.isClosed() && (mr.access() & Access.MW_BIND) != 0
        && mr.covers(addr, len)
        && ((acc & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) == 0
            || (mr.access() & Access.LOCAL_WRITE) != 0)
        && (newRkey >>> 8) == (mw.rkey() >>> 8)
        && (mw.type == MemoryWindow.Type.TYPE_1 || mw.region == null);
    if (!ok) return WcStatus.MW_BIND_ERR.code;
    mw.bind(newRkey, mr, addr, len, acc, this);
    return OK;
  }

  /**
   * Records the outcome of the request with {@code psn}; completions are then reported in
   * posting order, so a request finished locally waits for earlier ones still on the wire.
   */
  private void complete(int psn, WcStatus status, int byteLen) {
    synchronized (this) {
      if (state == QpState.ERR || state == QpState.RESET) return;
      long index = sqHead + ((psn - headPsn()) & 0xffffff);
      if (index >= sqSent) return;
      markDoneLocked(index, status, byteLen);
      drainLocked();
    }
  }

  // a slot's copy of ibv_send_wr has two fields the engine may reuse: next and qp_type
  private static final int OFF_DONE_STATUS = 72; // WcStatus code + 1; 0 while pending
  private static final int OFF_DONE_LENGTH = SendRequests.OFF_NEXT;

  private void markDoneLocked(long index, WcStatus status, int byteLen) {
    long wr = sqSlot(index);
    NativeMemory.putInt(wr + OFF_DONE_STATUS, status.code + 1);
    NativeMemory.putLong(wr + OFF_DONE_LENGTH, byteLen);
  }

  private void drainLocked() {
    while (sqHead < sqSent && state != QpState.ERR && state != QpState.RESET) {
      long wr = sqSlot(sqHead);
      int done = NativeMemory.getInt(wr + OFF_DONE_STATUS);
      if (done == 0) return;
      completeHeadLocked(WcStatus.of(done - 1), (int) NativeMemory.getLong(wr + OFF_DONE_LENGTH));
    }
  }

  private int headPsn() {
    return (int) ((sqPsn + sqHead) & 0xffffff);
  }

  private void completeHeadLocked(WcStatus status, int byteLen) {
    long wr = sqSlot(sqHead);
    int flags = NativeMemory.getInt(wr + SendRequests.OFF_SEND_FLAGS);
    WrOpcode op = WrOpcode.of(NativeMemory.getInt(wr + SendRequests.OFF_OPCODE));
    // on error the state changes first: whoever polls the error completion sees the new state
    boolean failed = status != WcStatus.SUCCESS;
    if (failed) state = type == QpType.RC ? QpState.ERR : QpState.SQE;
    if (signalAll || (flags & SendRequests.SIGNALED) != 0 || failed) {
      sendCq.push(NativeMemory.getLong(wr + SendRequests.OFF_WR_ID), status,
          WcOpcode.forRequest(op), byteLen, 0, qpn, 0, 0, false);
    }
    sqHead++;
    if (failed) {
      if (state == QpState.ERR) flushLocked(); // RC: everything
      else flushSendQueueLocked(); // UC, UD: the send queue only
      return;
    }
    maybeRaiseDrainedLocked();
  }

  private void flushSendQueueLocked() {
    while (sqHead < sqTail) {
      long wr = sqSlot(sqHead);
      sendCq.push(NativeMemory.getLong(wr + SendRequests.OFF_WR_ID), WcStatus.WR_FLUSH_ERR,
          WcOpcode.forRequest(WrOpcode.of(NativeMemory.getInt(wr + SendRequests.OFF_OPCODE))),
          0, 0, qpn, 0, 0, false);
      sqHead++;
    }
    sqSent = sqTail;
  }

  /** The responder's answer to the request at the head (or a stale one, ignored). */
  void onResponse(SoftPeer.Response r) {
    DeferredSignals signals = DeferredSignals.enter();
    try {
      takeResponse(r);
    } finally {
      signals.exit();
    }
  }

  private void takeResponse(SoftPeer.Response r) {
    boolean reschedule = false;
    synchronized (this) {
      if (isClosed() || state == QpState.ERR || state == QpState.RESET || sqHead == sqSent) {
        return;
      }
      long index = sqHead + ((r.psn - headPsn()) & 0xffffff);
      if (index >= sqSent) return;
      if (r.code != ACK && index != sqHead) return;
      long wr = sqSlot(index);
      WrOpcode op = WrOpcode.of(NativeMemory.getInt(wr + SendRequests.OFF_OPCODE));
      switch (r.code) {
        case ACK: {
          int len = 0;
          if (op == WrOpcode.RDMA_READ || op.isAtomic()) {
            localSegments(wr, false, true, local);
            if (op == WrOpcode.RDMA_READ) {
              Segments.copy(target.single(r.readAddress, r.readLength), 0, local, 0, r.readLength);
              len = r.readLength;
            } else {
              NativeMemory.putLong(local.address(0), r.atomicValue);
              len = 8;
            }
          } else {
            int n = NativeMemory.getInt(wr + SendRequests.OFF_NUM_SGE);
            long sges = NativeMemory.getLong(wr + SendRequests.OFF_SG_LIST);
            for (int k = 0; k < n; k++) len += NativeMemory.getInt(sges + k * 16L + 8);
          }
          retryLeft = retryCount;
          rnrLeft = rnrRetry;
          markDoneLocked(index, WcStatus.SUCCESS, len);
          drainLocked();
          break;
        }
        case RNR_NAK:
          if (rnrRetry != 7 && rnrLeft == 0) {
            completeHeadLocked(WcStatus.RNR_RETRY_EXC_ERR, 0);
          } else {
            if (rnrRetry != 7) rnrLeft--;
            pauseLocked(RNR_MICROS[r.rnrTimer & 31], false);
          }
          break;
        case NAK_INVALID_REQUEST:
          completeHeadLocked(WcStatus.REM_INV_REQ_ERR, 0);
          break;
        case NAK_REMOTE_ACCESS:
          completeHeadLocked(WcStatus.REM_ACCESS_ERR, 0);
          break;
        case NAK_REMOTE_OPERATION:
          completeHeadLocked(WcStatus.REM_OP_ERR, 0);
          break;
        case DROPPED:
        default:
          if (timeout != 0) pauseLocked(4096L << timeout >>> 10, true); // 4.096 us * 2^timeout
          else pauseLocked(Long.MAX_VALUE, true);
          break;
      }
      reschedule = !paused && sqSent != sqTail && state == QpState.RTS;
    }
    if (reschedule) device.engine.schedule(this);
  }

  /** Stops sending and rewinds to the head; resumes (retrying the head) after the delay. */
  private void pauseLocked(long micros, boolean transportTimeout) {
    if (paused) return;
    paused = true;
    sqSent = sqHead;
    if (micros == Long.MAX_VALUE) return; // timeout 0: wait forever, as the spec says
    int generation = ++pauseGeneration;
    device.provider.timer().schedule(() -> resume(generation, transportTimeout),
        Math.max(1, micros), TimeUnit.MICROSECONDS);
  }

  private void resume(int generation, boolean transportTimeout) {
    synchronized (this) {
      if (generation != pauseGeneration || !paused || isClosed()) return;
      paused = false;
      if (transportTimeout) {
        if (retryLeft == 0) {
          if (sqHead < sqTail && state == QpState.RTS) {
            completeHeadLocked(WcStatus.RETRY_EXC_ERR, 0);
          }
          return;
        }
        retryLeft--;
      }
    }
    device.engine.schedule(this);
  }

  /** A peer in another process was lost: what is in flight will not be answered. */
  void peerLost() {
    synchronized (this) {
      if (sqSent != sqHead && state == QpState.RTS) {
        pauseLocked(timeout == 0 ? Long.MAX_VALUE : 4096L << timeout >>> 10, true);
      }
    }
  }

  // ---------------------------------------------------------------- responder

  /**
   * Executes a peer's RC request against this QP and its PD's memory, filling {@code r}. Called
   * by the peer's engine (same JVM) or a fabric connection's reader (other process).
   */
  void handleRequest(SoftPeer.RequestHeader h, Segments payload, SoftPeer.Response r) {
    DeferredSignals signals = DeferredSignals.enter();
    try {
      serveRequest(h, payload, r);
    } finally {
      signals.exit();
    }
  }

  private void serveRequest(SoftPeer.RequestHeader h, Segments payload, SoftPeer.Response r) {
    r.psn = h.psn;
    r.code = DROPPED;
    AsyncEventType event = null;
    WrOpcode op;
    int d;
    long len = payload.total();
    boolean place = false;
    int incarnation;
    synchronized (this) {
      incarnation = resets;
      if (!acceptsRequests(h)) return;
      QpState s = state;
      if (s == QpState.RTR && !commEstablished) {
        commEstablished = true;
        context.raise(AsyncEvent.ofQp(AsyncEventType.COMM_EST, this));
      }
      d = ((h.psn - epsn) << 8) >> 8;
      if (d > 0) return; // after a NAK the rest are dropped until the retry
      op = WrOpcode.of(h.opcode);
      if (d < 0 && op != WrOpcode.RDMA_READ) { // a duplicate: acknowledge again
        r.code = ACK;
        return;
      }
      if ((op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_WRITE_WITH_IMM) && len > 0) {
        int code = admitWrite(h, len);
        if (code == ACK) {
          place = true;
          responding++; // close() waits for the copy: the memory may go with the QP
        } else {
          event = settleLocked(code, d, r);
        }
      } else {
        event = settleLocked(respond(op, h, payload, r), d, r);
      }
    }
    if (place) {
      // the data goes in outside the QP's monitor, as a NIC places packets while the owner
      // posts and polls: they do not wait for the copy
      boolean copied = false;
      try {
        Segments.copy(payload, 0, placed.single(h.remoteAddress, (int) len), 0, len);
        copied = true;
      } finally {
        synchronized (this) {
          if (--responding == 0 && isClosed()) notifyAll();
          // gone to the error state (or closed) meanwhile: dropped, as by a NIC's QP in error
          if (copied && resets == incarnation && acceptsRequests(h)) {
            event = settleLocked(op == WrOpcode.RDMA_WRITE ? ACK
                : receiveWriteImmediate(h, len, r), d, r);
          }
        }
      }
    }
    if (event != null) context.raise(AsyncEvent.ofQp(event, this));
  }

  private boolean acceptsRequests(SoftPeer.RequestHeader h) {
    QpState s = state;
    return !isClosed() && type == QpType.RC && h.srcQpn == destQpn
        && (s == QpState.RTR || s == QpState.RTS || s == QpState.SQD || s == QpState.SQE);
  }

  /** The response's code; on a NAK the QP goes to the error state, whose event is returned. */
  private AsyncEventType settleLocked(int code, int d, SoftPeer.Response r) {
    r.code = code;
    if (code == ACK) {
      if (d == 0) epsn = (epsn + 1) & 0xffffff;
      return null;
    }
    if (code == RNR_NAK) return null;
    toErrorLocked();
    return code == NAK_REMOTE_ACCESS ? AsyncEventType.QP_ACCESS_ERR : AsyncEventType.QP_REQ_ERR;
  }

  /** ACK when this QP takes a write of {@code len} bytes at the request's address and rkey. */
  private int admitWrite(SoftPeer.RequestHeader h, long len) {
    if ((accessFlags & Access.REMOTE_WRITE) == 0) return NAK_INVALID_REQUEST;
    if (!checkRemote(h.rkey, h.remoteAddress, len, Access.REMOTE_WRITE)) return NAK_REMOTE_ACCESS;
    return ACK;
  }

  /**
   * A WRITE WITH IMM's data is placed: it takes a receive. An RNR NAK leaves the data placed,
   * as a NIC leaves a multi-packet write's first packets; the retry places it again.
   */
  private int receiveWriteImmediate(SoftPeer.RequestHeader h, long len, SoftPeer.Response r) {
    synchronized (receiveLock()) {
      if (!receiveAvailable()) {
        r.rnrTimer = minRnrTimer;
        return RNR_NAK;
      }
      long wrId = takeReceive();
      recvCq.push(wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) len,
          h.immOrRkeyBigEndian, qpn, h.srcQpn, WorkCompletions.FLAG_WITH_IMM,
          (h.sendFlags & SendRequests.SOLICITED) != 0);
    }
    return ACK;
  }

  /** The answer to a request with no data to place (a write's is placed by the caller). */
  private int respond(WrOpcode op, SoftPeer.RequestHeader h, Segments payload, SoftPeer.Response r) {
    long len = payload.total();
    switch (op) {
      case RDMA_WRITE:
      case RDMA_WRITE_WITH_IMM: {
        int code = admitWrite(h, len);
        if (code != ACK || op == WrOpcode.RDMA_WRITE) return code;
        return receiveWriteImmediate(h, len, r);
      }
      case SEND:
      case SEND_WITH_IMM:
      case SEND_WITH_INV: {
        synchronized (receiveLock()) {
          if (!receiveAvailable()) {
            r.rnrTimer = minRnrTimer;
            return RNR_NAK;
          }
          return deliverSend(op, h, payload, 0);
        }
      }
      case RDMA_READ: {
        if ((accessFlags & Access.REMOTE_READ) == 0) return NAK_INVALID_REQUEST;
        if (!checkRemote(h.rkey, h.remoteAddress, h.readLength, Access.REMOTE_READ)) {
          return NAK_REMOTE_ACCESS;
        }
        r.readAddress = h.remoteAddress;
        r.readLength = h.readLength;
        return ACK;
      }
      case ATOMIC_CMP_AND_SWP:
      case ATOMIC_FETCH_AND_ADD: {
        if ((accessFlags & Access.REMOTE_ATOMIC) == 0) return NAK_INVALID_REQUEST;
        if ((h.remoteAddress & 7) != 0) return NAK_INVALID_REQUEST;
        if (!checkRemote(h.rkey, h.remoteAddress, 8, Access.REMOTE_ATOMIC)) return NAK_REMOTE_ACCESS;
        r.atomicValue = op == WrOpcode.ATOMIC_CMP_AND_SWP
            ? NativeMemory.compareAndSwapLong(h.remoteAddress, h.compareAdd, h.swap)
            : NativeMemory.fetchAndAddLong(h.remoteAddress, h.compareAdd);
        return ACK;
      }
      default:
        return NAK_INVALID_REQUEST;
    }
  }

  /**
   * Consumes the next receive for a send: scatters the payload (after {@code prefix} bytes, the
   * UD GRH), completes the receive. Returns ACK, or the NAK for the error completed.
   */
  private int deliverSend(WrOpcode op, SoftPeer.RequestHeader h, Segments payload, int prefix) {
    long len = payload.total();
    long wrId = headReceiveWrId();
    long sges = headReceiveSges();
    int n = headReceiveNumSge();
    scatter.clear();
    boolean protOk = true;
    for (int k = 0; k < n; k++) {
      long addr = NativeMemory.getLong(sges + k * 16L);
      int l = NativeMemory.getInt(sges + k * 16L + 8);
      int lkey = NativeMemory.getInt(sges + k * 16L + 12);
      if (!checkLocal(lkey, addr, l, true)) {
        protOk = false;
        break;
      }
      if (l > 0) scatter.add(addr, l);
    }
    takeReceive();
    if (!protOk) {
      recvCq.push(wrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, qpn, h.srcQpn, 0, false);
      return NAK_REMOTE_OPERATION;
    }
    if (len + prefix > scatter.total()) {
      recvCq.push(wrId, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, qpn, h.srcQpn, 0, false);
      return NAK_INVALID_REQUEST;
    }
    int flags = 0;
    int imm = 0;
    if (prefix > 0) {
      writeGrh(h);
      flags |= WorkCompletions.FLAG_GRH;
    }
    if (len > 0) Segments.copy(payload, 0, scatter, prefix, len);
    if (op == WrOpcode.SEND_WITH_IMM) {
      flags |= WorkCompletions.FLAG_WITH_IMM;
      imm = h.immOrRkeyBigEndian;
    } else if (op == WrOpcode.SEND_WITH_INV) {
      Object o = device.memoryKeys.get(h.immOrRkeyBigEndian);
      if (!(o instanceof SoftMw) || ((SoftMw) o).type != MemoryWindow.Type.TYPE_2
          || ((SoftMw) o).pd != pd) {
        recvCq.push(wrId, WcStatus.REM_INV_REQ_ERR, WcOpcode.RECV, 0, 0, qpn, h.srcQpn, 0, false);
        return NAK_INVALID_REQUEST;
      }
      ((SoftMw) o).invalidate();
      flags |= WorkCompletions.FLAG_WITH_INV;
      imm = h.immOrRkeyBigEndian;
    }
    recvCq.push(wrId, WcStatus.SUCCESS, WcOpcode.RECV, (int) (len + prefix), imm, qpn, h.srcQpn,
        flags, (h.sendFlags & SendRequests.SOLICITED) != 0);
    return ACK;
  }

  private void writeGrh(SoftPeer.RequestHeader h) {
    // a GRH's source GID at bytes 8..23, destination GID at 24..39
    long at = 0;
    byte[] grh = grhBuffer;
    grh[0] = 0x60;
    System.arraycopy(h.srcGid, 0, grh, 8, 16);
    for (int i = 0; i < 16; i++) grh[24 + i] = device.gid.byteAt(i);
    for (int i = 0; i < scatter.count() && at < GRH_BYTES; i++) {
      int n = (int) Math.min(scatter.length(i), GRH_BYTES - at);
      NativeMemory.copyFromArray(grh, (int) at, scatter.address(i), n);
      at += n;
    }
  }

  /** A UD datagram or UC message: no answer; errors and a missing receive drop it. */
  void handleDatagram(SoftPeer.RequestHeader h, Segments payload) {
    DeferredSignals signals = DeferredSignals.enter();
    try {
      serveDatagram(h, payload);
    } finally {
      signals.exit();
    }
  }

  private void serveDatagram(SoftPeer.RequestHeader h, Segments payload) {
    synchronized (this) {
      QpState s = state;
      if (isClosed() || !(s == QpState.RTR || s == QpState.RTS || s == QpState.SQD
          || s == QpState.SQE)) {
        return;
      }
      WrOpcode op = WrOpcode.of(h.opcode);
      if (type == QpType.UD) {
        if (h.qkey != qkey) return;
        synchronized (receiveLock()) {
          if (!receiveAvailable()) return;
          if (deliverSend(op, h, payload, GRH_BYTES) != ACK) toErrorLocked();
        }
        return;
      }
      if (type != QpType.UC || h.srcQpn != destQpn) return;
      if (op == WrOpcode.RDMA_WRITE || op == WrOpcode.RDMA_WRITE_WITH_IMM) {
        long len = payload.total();
        if ((accessFlags & Access.REMOTE_WRITE) == 0
            || !checkRemote(h.rkey, h.remoteAddress, len, Access.REMOTE_WRITE)) {
          return;
        }
        if (op == WrOpcode.RDMA_WRITE) {
          if (len > 0) Segments.copy(payload, 0, target.single(h.remoteAddress, (int) len), 0, len);
          return;
        }
        synchronized (receiveLock()) {
          if (!receiveAvailable()) return;
          if (len > 0) Segments.copy(payload, 0, target.single(h.remoteAddress, (int) len), 0, len);
          long wrId = takeReceive();
          recvCq.push(wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) len,
              h.immOrRkeyBigEndian, qpn, h.srcQpn, WorkCompletions.FLAG_WITH_IMM, false);
        }
        return;
      }
      synchronized (receiveLock()) {
        if (!receiveAvailable()) return;
        if (deliverSend(op, h, payload, 0) != ACK) toErrorLocked();
      }
    }
  }

  /** Checks an rkey grants {@code needed} on {@code [addr, addr+len)} to this QP. */
  private boolean checkRemote(int rkey, long addr, long len, int needed) {
    Object o = device.memoryKeys.get(rkey);
    if (o instanceof SoftMr) {
      SoftMr mr = (SoftMr) o;
      return mr.pd == pd && (mr.access() & needed) != 0 && mr.covers(addr, len);
    }
    if (o instanceof SoftMw) {
      SoftMw mw = (SoftMw) o;
      SoftMr mr = mw.region;
      if (mr == null || mw.pd != pd || (mw.access & needed) == 0 || !mw.covers(addr, len)) {
        return false;
      }
      if (mw.type == MemoryWindow.Type.TYPE_2 && mw.boundQp != this) return false;
      return mr.covers(addr, len);
    }
    return false;
  }

  /** Held from finding a receive to consuming it: an SRQ is shared by other QPs' responders. */
  private Object receiveLock() {
    return srq != null ? srq : this;
  }

  private boolean receiveAvailable() {
    if (srq == null) return !rq.isEmpty();
    synchronized (srq) {
      return !srq.ring.isEmpty();
    }
  }

  private long headReceiveWrId() {
    if (srq == null) return rq.headWrId();
    synchronized (srq) {
      return srq.ring.headWrId();
    }
  }

  private long headReceiveSges() {
    if (srq == null) return rq.headSges();
    synchronized (srq) {
      return srq.ring.headSges();
    }
  }

  private int headReceiveNumSge() {
    if (srq == null) return rq.headNumSge();
    synchronized (srq) {
      return srq.ring.headNumSge();
    }
  }

  /** Pops the head receive and returns its wr_id. */
  private long takeReceive() {
    if (srq == null) {
      long id = rq.headWrId();
      rq.pop();
      return id;
    }
    synchronized (srq) {
      long id = srq.ring.headWrId();
      srq.ring.pop();
      srq.afterTake(context);
      return id;
    }
  }

  private long sqSlot(long index) {
    return sqMemory.address() + (index % sqCapacity) * sqSlotSize;
  }

  // ---------------------------------------------------------------- destroy

  /** The engine reads a request's slot outside the lock: it must not be freed meanwhile. */
  private boolean executing;
  private boolean queuesFreed;

  private void freeQueuesLocked() {
    if (queuesFreed) return;
    queuesFreed = true;
    sqMemory.close();
    if (rq != null) rq.close();
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    synchronized (this) {
      state = QpState.RESET;
      pauseGeneration++;
      device.qps.remove(qpn);
      boolean interrupted = false;
      while (responding > 0) { // the owner frees the memory once we return
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) Thread.currentThread().interrupt();
      if (!executing) freeQueuesLocked(); // else the engine frees them after its request
    }
    sendCq.users.decrementAndGet();
    recvCq.users.decrementAndGet();
    if (srq != null) srq.users.decrementAndGet();
    context.qps.remove(this);
    pd.forget(this);
    device.provider.counters.qps.decrementAndGet();
  }
}
