package dev.pekkordma.soft;

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
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WrOpcode;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A software queue pair: its attributes and state machine, with the {@link Requester} (its send
 * queue, worked by an engine) and the {@link Responder} (called by its peer's requests). Both
 * are guarded by this object's monitor. A QP never holds its own monitor while calling into
 * another QP, so traffic in both directions cannot deadlock; its fence makes destruction and
 * reset wait for data being placed on its behalf.
 */
final class SoftQp extends Closeable implements QueuePair {
  private static final Logger LOG = LoggerFactory.getLogger(SoftQp.class);
  /** The most requests one post runs in the poster's thread (see postSend). */
  private static final int INLINE_MAX = 4;

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
  /** Copies on this QP's behalf; a reset opens a new generation, destruction closes it. */
  final AccessFence fence = new AccessFence();
  final Requester requester;
  final Responder responder;

  // attributes (guarded by this)
  volatile QpState state = QpState.RESET;
  private int port = 1;
  int accessFlags;
  int qkey;
  private int pkeyIndex;
  private AddressVector av;
  private volatile byte[] peerGid; // av's destination GID, compared with each request's source
  private Mtu pathMtu = Mtu.MTU_1024;
  volatile int destQpn;
  private int rqPsn;
  int sqPsn;
  int timeout;
  int retryCount;
  int rnrRetry;
  int minRnrTimer;
  private int maxRdAtomic;
  private int maxDestRdAtomic;
  private boolean sqdNotify;
  private boolean sqDrainedRaised;
  /** How requests reach the peer: set from the address vector at first use. */
  SoftPeer peer;
  private volatile String errorCause;
  /** The multicast groups this QP is attached to (guarded by this). */
  private final java.util.Set<dev.pekkordma.verbs.Gid> groups = new java.util.LinkedHashSet<>();

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
    this.requester = new Requester(this);
    this.responder = new Responder(this);
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
  public String describe() {
    return type + " QP " + qpn;
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public int qpNum() { return qpn; }
  @Override public QpType type() { return type; }
  @Override public QpState state() { return state; }
  @Override public QpCapabilities capabilities() { return caps; }

  @Override
  public Optional<String> errorCause() {
    return Optional.ofNullable(errorCause);
  }

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
      if (a.has(QpAttributes.AV)) setAddress(a.addressVector());
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
          if (from == QpState.INIT) responder.start(rqPsn);
          state = to;
          route(); // failures of the peer's process reach this QP from now on
          break;
        case RTS:
          if (from == QpState.RTR) requester.start();
          state = to;
          schedule = !requester.idle();
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
    if (schedule) schedule();
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

  private void setAddress(AddressVector v) {
    av = v;
    peerGid = v.dgid().toBytes();
    forgetPeer();
  }

  private void forgetPeer() {
    if (peer != null) peer.detach(this);
    peer = null;
  }

  private void resetLocked() {
    state = QpState.RESET;
    fence.close(); // data placed for the connection before the reset ends first
    fence.reopen();
    requester.reset();
    responder.reset();
    errorCause = null;
    forgetPeer();
  }

  /** Flushes every outstanding send and receive with WR_FLUSH_ERR (the QP is in ERR). */
  void flushLocked() {
    requester.flush();
    responder.flush();
  }

  void toErrorLocked() {
    if (state == QpState.ERR || state == QpState.RESET) return;
    state = QpState.ERR;
    flushLocked();
  }

  /** Records why the QP is about to fail, for {@link #errorCause()} (the first reason stays). */
  void noteError(String cause) {
    if (errorCause == null) errorCause = cause;
  }

  /** An internal error (injected, or the device died): QP_FATAL and the error state. */
  void fatal(Throwable cause) {
    synchronized (this) {
      if (isClosed() || state == QpState.RESET || state == QpState.ERR) return;
      if (cause != null) noteError(describe() + " failed in the provider: " + cause);
      toErrorLocked();
    }
    context.raise(AsyncEvent.ofQp(AsyncEventType.QP_FATAL, this));
  }

  /**
   * The peer broke the fabric's protocol, or its link failed for good: the QP goes to ERR, an
   * outstanding request completes with {@code status}, and {@code cause} names the peer. A QP
   * that has left {@code link} since (reset, or given a new address) is not that link's to fail.
   */
  void failByPeer(FabricLink link, WcStatus status, String cause) {
    DeferredWork signals = DeferredWork.enter();
    try {
      synchronized (this) {
        if (isClosed() || state == QpState.RESET || state == QpState.ERR) return;
        if (!link.holds(this)) return;
        noteError(cause);
        requester.failHead(status);
        toErrorLocked();
      }
      context.raise(AsyncEvent.ofQp(AsyncEventType.QP_FATAL, this));
    } finally {
      signals.exit();
    }
  }

  void engineFailure(Throwable e) {
    LOG.error("{} failed in the engine", describe(), e);
    fatal(e);
  }

  void maybeRaiseDrainedLocked() {
    if (state == QpState.SQD && sqdNotify && !sqDrainedRaised && requester.drained()) {
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
          && requester.idle();
      long before = requester.tail();
      try {
        for (int i = 0; i < requests.size(); i++) requester.enqueue(requests, i);
      } finally {
        if (s == QpState.ERR) flushLocked();
        else if (s == QpState.SQE) requester.flush(); // receives still work in SQE
        schedule = s == QpState.RTS && requester.tail() != before;
      }
    }
    if (!schedule) return;
    if (here) {
      requester.work(SoftEngine.BATCH); // the peer is in this JVM: as rxe does, run it here
    } else {
      schedule();
    }
  }

  @Override
  public void postRecv(RecvRequests requests) {
    checkOpen("ibv_post_recv");
    if (requests == null) throw new RdmaException("ibv_post_recv", RdmaException.EINVAL, "requests are null");
    synchronized (this) {
      ReceiveRing rq = responder.rq;
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
          throw new RdmaException("ibv_post_recv", RdmaException.EINVAL, "request " + i
              + " (wr_id " + requests.wrId(i) + ") on " + describe() + " has " + n
              + " SGEs; the QP takes at most " + rq.maxSge() + " (max_recv_sge)");
        }
        if (rq.isFull()) {
          throw new RdmaException("ibv_post_recv", RdmaException.ENOMEM, "request " + i
              + " (wr_id " + requests.wrId(i) + ") on " + describe()
              + ": the receive queue already holds " + rq.capacity() + " receives (max_recv_wr)");
        }
        responder.postRecv(requests, i);
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

  // ---------------------------------------------------------------- for the requester and responder

  /** Queues the send queue on the engine that serves its peer (the device's for this JVM). */
  void schedule() {
    engine().schedule(this);
  }

  /** The engine that works this QP's send queue now: its peer's, or its device's. */
  SoftEngine engine() {
    SoftPeer p;
    synchronized (this) {
      p = route();
    }
    return p.engine(device);
  }

  /** The route to the peer (monitor held); connected QPs without one use the device's engine. */
  SoftPeer route() {
    if (peer == null && av != null && type != QpType.UD) {
      peer = SoftFabric.get().route(av.dgid());
      peer.attach(this);
    }
    return peer != null ? peer : device.localPeer;
  }

  /** Whether {@code gid} (a request's source, as its link vouches for it) is our peer's. */
  boolean isPeer(byte[] gid) {
    byte[] mine = peerGid;
    return mine != null && java.util.Arrays.equals(mine, gid);
  }

  /**
   * Checks that {@code lkey} grants this QP {@code [addr, addr+len)} (with LOCAL_WRITE when it
   * is written) and adds it, fenced, to {@code into}.
   */
  boolean grantLocal(int lkey, long addr, long len, boolean needWrite, Segments into) {
    Object o = device.memoryKeys.get(lkey);
    if (!(o instanceof SoftMr)) return false;
    SoftMr mr = (SoftMr) o;
    return mr.pd == pd && mr.grant(addr, len, needWrite ? Access.LOCAL_WRITE : 0, into);
  }

  void copyGid(byte[] into) {
    for (int i = 0; i < 16; i++) into[i] = device.gid.byteAt(i);
  }

  /** The local ACK timeout, 4.096 us * 2^timeout; Long.MAX_VALUE for 0 (wait forever). */
  long transportTimeoutMicros() {
    return timeout == 0 ? Long.MAX_VALUE : Math.max(1, (4096L << timeout) / 1000);
  }

  String timeoutDescription() {
    long micros = transportTimeoutMicros();
    return (retryCount + 1) + " tries of " + (micros >= 10_000 ? micros / 1000 + " ms"
        : micros + " us") + " (timeout " + timeout + ", retry_cnt " + retryCount + ")";
  }

  /** Our peer for messages: its QP number and GID, and the process the fabric reaches it in. */
  String describePeer() {
    SoftPeer p = peer;
    return "QP " + destQpn + " at "
        + (p != null ? p.describe(av.dgid()) : av != null ? av.dgid().toString() : "no address");
  }

  // ---------------------------------------------------------------- multicast

  /**
   * {@code ibv_attach_mcast}: from now on this UD QP receives datagrams sent to {@code mgid}
   * with QPN 0xFFFFFF (its Q_Key checked as for any). Attaching twice changes nothing.
   */
  void attachMulticast(dev.pekkordma.verbs.Gid mgid) {
    String verb = "ibv_attach_mcast";
    checkOpen(verb);
    if (type != QpType.UD) {
      throw new RdmaException(verb, RdmaException.EINVAL, describe()
          + ": only UD QPs join multicast groups");
    }
    if (mgid == null || !SoftMulticast.isMulticast(mgid)) {
      throw new RdmaException(verb, RdmaException.EINVAL, "GID " + mgid + " is not a multicast"
          + " GID (ff..., or an IPv4-mapped class D address)");
    }
    synchronized (this) {
      if (!groups.add(mgid)) return;
    }
    try {
      SoftFabric.get().multicast.attach(this, mgid);
    } catch (java.io.IOException | RuntimeException e) {
      synchronized (this) {
        groups.remove(mgid);
      }
      throw new RdmaException(verb, RdmaException.ENODEV, describe() + " cannot join group "
          + mgid + ": " + e.getMessage(), e);
    }
  }

  /** {@code ibv_detach_mcast}; EINVAL naming the group when the QP is not attached to it. */
  void detachMulticast(dev.pekkordma.verbs.Gid mgid) {
    String verb = "ibv_detach_mcast";
    checkOpen(verb);
    synchronized (this) {
      if (!groups.remove(mgid)) {
        throw new RdmaException(verb, RdmaException.EINVAL, describe()
            + " is not attached to multicast group " + mgid);
      }
    }
    SoftFabric.get().multicast.detach(this, mgid);
  }

  /** The groups this QP is attached to. */
  synchronized java.util.List<dev.pekkordma.verbs.Gid> multicastGroups() {
    return new java.util.ArrayList<>(groups);
  }

  // ---------------------------------------------------------------- destroy

  @Override
  public void close() {
    if (!markClosed()) return;
    java.util.List<dev.pekkordma.verbs.Gid> attached;
    synchronized (this) {
      attached = new java.util.ArrayList<>(groups);
      groups.clear();
    }
    // a QP destroyed while attached leaves its groups (the CM refuses that with EBUSY first)
    for (dev.pekkordma.verbs.Gid g : attached) SoftFabric.get().multicast.detach(this, g);
    synchronized (this) {
      state = QpState.RESET;
      device.qps.remove(qpn);
      forgetPeer();
      fence.close(); // the owner frees the memory once we return
      requester.close();
      responder.close();
    }
    sendCq.users.decrementAndGet();
    recvCq.users.decrementAndGet();
    if (srq != null) srq.users.decrementAndGet();
    context.qps.remove(this);
    pd.forget(this);
    device.provider.counters.qps.decrementAndGet();
  }
}
