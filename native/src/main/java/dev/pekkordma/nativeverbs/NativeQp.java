package dev.pekkordma.nativeverbs;

import dev.pekkordma.verbs.abi.RequestLayout;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.Gid;
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
import dev.pekkordma.verbs.WrOpcode;
import dev.pekkordma.verbs.spi.Checks;
import java.util.function.IntToLongFunction;

/**
 * A queue pair: {@code struct ibv_qp *}. Posting hands the request batch's own memory (already in
 * ibv_send_wr / ibv_recv_wr layout) to the driver's post function in one call.
 */
final class NativeQp extends NativeResource implements QueuePair {
  /** Every ibv_qp_attr_mask bit the API knows (for ibv_query_qp). */
  private static final int ALL_ATTRS = (1 << 21) - 1;

  final NativePd pd;
  private final int qpNum;
  private final QpType type;
  private final QpCapabilities caps;
  private final NativeCq sendCq;
  private final NativeCq recvCq;
  private final NativeSrq srq;
  private final long fnPostSend;
  private final long fnPostRecv;
  /** struct ibv_mw_bind for bindMemoryWindow, guarded by itself. */
  private final long mwBind;
  /** The CM id that created it with rdma_create_qp (and destroys it), or null. */
  final NativeCmId cmId;
  /**
   * A UD QP's largest datagram: its port's active MTU in bytes, read when the QP gets its port
   * (rdma_create_qp, or a modify to INIT); 0 before, when nothing is checked.
   */
  private volatile int datagramMtu;

  private NativeQp(NativePd pd, long qp, QpType type, QpCapabilities caps, NativeCq sendCq,
      NativeCq recvCq, NativeSrq srq, NativeCmId cmId) {
    super(qp, pd);
    this.cmId = cmId;
    this.pd = pd;
    this.qpNum = NativeMemory.getInt(qp + Layout.QP_QP_NUM);
    this.type = type;
    this.caps = caps;
    this.sendCq = sendCq;
    this.recvCq = recvCq;
    this.srq = srq;
    this.fnPostSend = pd.context.fnPostSend;
    this.fnPostRecv = pd.context.fnPostRecv;
    this.mwBind = NativeMemory.allocate(Layout.MW_BIND_SIZE);
    sendCq.users.add(this);
    recvCq.users.add(this);
    if (srq != null) srq.users.add(this);
    pd.context.qpsByHandle.put(qp, this);
  }

  static NativeQp create(NativePd pd, QpInitAttributes a) {
    return create(pd, a, null);
  }

  /** Creates with ibv_create_qp, or with rdma_create_qp on {@code cmId} when not null. */
  static NativeQp create(NativePd pd, QpInitAttributes a, NativeCmId cmId) {
    NativeDeviceContext ctx = pd.context;
    a.validate(ctx.queryDevice());
    NativeCq send = cq(ctx, a.sendCq(), "sendCq");
    NativeCq recv = cq(ctx, a.recvCq(), "recvCq");
    NativeSrq srq = null;
    if (a.srq() != null) {
      if (!(a.srq() instanceof NativeSrq) || ((NativeSrq) a.srq()).pd.context != ctx) {
        throw new RdmaException("ibv_create_qp", RdmaException.EINVAL,
            "srq belongs to another device context");
      }
      srq = (NativeSrq) a.srq();
      srq.checkOpen("ibv_create_qp");
    }
    ctx.provider.maps.beforeCreating(cmId == null ? "ibv_create_qp" : "rdma_create_qp",
        "a " + a.type() + " QP");
    long attr = Verbs.scratch(Layout.QP_INIT_ATTR_SIZE);
    NativeMemory.putLong(attr + Layout.QP_INIT_ATTR_SEND_CQ, send.handle);
    NativeMemory.putLong(attr + Layout.QP_INIT_ATTR_RECV_CQ, recv.handle);
    NativeMemory.putLong(attr + Layout.QP_INIT_ATTR_SRQ, srq == null ? 0 : srq.handle);
    long cap = attr + Layout.QP_INIT_ATTR_CAP;
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_SEND_WR, a.maxSendWr());
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_RECV_WR, srq == null ? a.maxRecvWr() : 0);
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_SEND_SGE, a.maxSendSge());
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_RECV_SGE, srq == null ? a.maxRecvSge() : 0);
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_INLINE_DATA, a.maxInlineData());
    NativeMemory.putInt(attr + Layout.QP_INIT_ATTR_QP_TYPE, a.type().code);
    NativeMemory.putInt(attr + Layout.QP_INIT_ATTR_SQ_SIG_ALL, a.signalAll() ? 1 : 0);
    long qp;
    if (cmId == null) {
      qp = Verbs.createQp(pd.handle, attr, "creating a " + a.type() + " QP");
    } else {
      Verbs.rdmaCreateQp(cmId.handle, pd.handle, attr, "creating a " + a.type() + " QP");
      qp = NativeMemory.getLong(cmId.handle + Layout.CM_ID_QP);
    }
    QpCapabilities caps = new QpCapabilities(
        NativeMemory.getInt(cap + Layout.QP_CAP_MAX_SEND_WR),
        NativeMemory.getInt(cap + Layout.QP_CAP_MAX_RECV_WR),
        NativeMemory.getInt(cap + Layout.QP_CAP_MAX_SEND_SGE),
        NativeMemory.getInt(cap + Layout.QP_CAP_MAX_RECV_SGE),
        NativeMemory.getInt(cap + Layout.QP_CAP_MAX_INLINE_DATA));
    NativeQp q = new NativeQp(pd, qp, a.type(), caps, send, recv, srq, cmId);
    ctx.provider.live.qps.incrementAndGet();
    if (cmId != null && a.type() == QpType.UD) q.readDatagramMtu(cmId.portNum());
    return q;
  }

  private static NativeCq cq(NativeDeviceContext ctx, Object cq, String name) {
    if (!(cq instanceof NativeCq) || ((NativeCq) cq).context != ctx) {
      throw new RdmaException("ibv_create_qp", RdmaException.EINVAL,
          name + " belongs to another device context");
    }
    NativeCq c = (NativeCq) cq;
    c.checkOpen("ibv_create_qp");
    return c;
  }

  @Override int rank() { return 0; }
  @Override public String describe() { return type + " QP " + qpNum; }
  @Override String destroyVerb() { return "ibv_destroy_qp"; }
  @Override
  void destroy() {
    if (cmId != null) {
      // the kernel refuses to destroy a QP attached to a multicast group (EBUSY), which
      // rdma_destroy_qp would swallow, forgetting the QP: refused here, naming the groups
      if (!cmId.joinedGroups().isEmpty()) {
        throw new RdmaException("rdma_destroy_qp", RdmaException.EBUSY, describe()
            + " is attached to multicast group(s) " + cmId.joinedGroups()
            + ": leave them first (leaveMulticast)");
      }
      synchronized (cmId) { // not while a disconnect moves this QP to ERR
        Verbs.rdmaDestroyQp(cmId.handle);
      }
    } else {
      Verbs.destroyQp(handle, "destroying " + describe());
    }
  }

  @Override
  void forget() {
    sendCq.users.remove(this);
    recvCq.users.remove(this);
    if (srq != null) srq.users.remove(this);
    pd.context.qpsByHandle.remove(handle);
    if (cmId != null) cmId.qpClosed(this);
    synchronized (this) {
      NativeMemory.free(mwBind);
    }
    pd.context.provider.live.qps.decrementAndGet();
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public int qpNum() { return qpNum; }
  @Override public QpType type() { return type; }
  @Override public QpCapabilities capabilities() { return caps; }

  @Override
  public QpState state() {
    checkOpen("ibv_query_qp");
    long attr = Verbs.scratch(Layout.QP_ATTR_SIZE + Layout.QP_INIT_ATTR_SIZE);
    Verbs.queryQp(handle, attr, QpAttributes.STATE, attr + Layout.QP_ATTR_SIZE);
    return QpState.of(NativeMemory.getInt(attr + Layout.QP_ATTR_QP_STATE));
  }

  @Override
  public QpAttributes query() {
    checkOpen("ibv_query_qp");
    long attr = Verbs.scratch(Layout.QP_ATTR_SIZE + Layout.QP_INIT_ATTR_SIZE);
    Verbs.queryQp(handle, attr, ALL_ATTRS, attr + Layout.QP_ATTR_SIZE);
    QpState state = QpState.of(NativeMemory.getInt(attr + Layout.QP_ATTR_QP_STATE));
    QpAttributes q = new QpAttributes().state(state)
        .pkeyIndex(u16(attr + Layout.QP_ATTR_PKEY_INDEX))
        .port(u8(attr + Layout.QP_ATTR_PORT_NUM));
    if (type == QpType.UD) {
      q.qkey(NativeMemory.getInt(attr + Layout.QP_ATTR_QKEY));
    } else {
      q.accessFlags(NativeMemory.getInt(attr + Layout.QP_ATTR_QP_ACCESS_FLAGS));
    }
    boolean connected = state != QpState.RESET && state != QpState.INIT;
    if (connected) {
      q.rqPsn(NativeMemory.getInt(attr + Layout.QP_ATTR_RQ_PSN));
      if (type != QpType.UD) {
        int mtu = NativeMemory.getInt(attr + Layout.QP_ATTR_PATH_MTU);
        if (mtu >= 1 && mtu <= 5) q.pathMtu(Mtu.of(mtu));
        q.destQpNum(NativeMemory.getInt(attr + Layout.QP_ATTR_DEST_QP_NUM))
            .addressVector(readAhAttr(attr + Layout.QP_ATTR_AH_ATTR));
      }
      if (type == QpType.RC) {
        q.maxDestRdAtomic(u8(attr + Layout.QP_ATTR_MAX_DEST_RD_ATOMIC))
            .minRnrTimer(u8(attr + Layout.QP_ATTR_MIN_RNR_TIMER));
      }
      if (state != QpState.RTR) {
        q.sqPsn(NativeMemory.getInt(attr + Layout.QP_ATTR_SQ_PSN));
        if (type == QpType.RC) {
          q.timeout(u8(attr + Layout.QP_ATTR_TIMEOUT))
              .retryCount(u8(attr + Layout.QP_ATTR_RETRY_CNT))
              .rnrRetry(u8(attr + Layout.QP_ATTR_RNR_RETRY))
              .maxRdAtomic(u8(attr + Layout.QP_ATTR_MAX_RD_ATOMIC));
        }
      }
    }
    return q;
  }

  @Override
  public void modify(QpAttributes a) {
    checkOpen("ibv_modify_qp");
    synchronized (this) {
      QpState from = state();
      // illegal transitions fail here, naming from and to, before the driver sees them
      QpStateMachine.check(qpNum, type, from, a);
      int mask = a.mask();
      long attr = Verbs.scratch(Layout.QP_ATTR_SIZE);
      if (a.has(QpAttributes.STATE)) NativeMemory.putInt(attr + Layout.QP_ATTR_QP_STATE, a.state().code);
      if (a.has(QpAttributes.CUR_STATE)) {
        NativeMemory.putInt(attr + Layout.QP_ATTR_CUR_QP_STATE, a.currentState().code);
      }
      if (a.has(QpAttributes.EN_SQD_ASYNC_NOTIFY)) {
        NativeMemory.putByte(attr + Layout.QP_ATTR_EN_SQD_ASYNC_NOTIFY, (byte) (a.sqdAsyncNotify() ? 1 : 0));
      }
      if (a.has(QpAttributes.ACCESS_FLAGS)) {
        NativeMemory.putInt(attr + Layout.QP_ATTR_QP_ACCESS_FLAGS, a.accessFlags());
      }
      if (a.has(QpAttributes.PKEY_INDEX)) putU16(attr + Layout.QP_ATTR_PKEY_INDEX, a.pkeyIndex());
      if (a.has(QpAttributes.PORT)) putU8(attr + Layout.QP_ATTR_PORT_NUM, a.port());
      if (a.has(QpAttributes.QKEY)) NativeMemory.putInt(attr + Layout.QP_ATTR_QKEY, a.qkey());
      if (a.has(QpAttributes.AV)) {
        if (a.addressVector() == null) {
          throw new RdmaException("ibv_modify_qp", RdmaException.EINVAL,
              describe() + ": AV is set but the address vector is null");
        }
        writeAhAttr(attr + Layout.QP_ATTR_AH_ATTR, a.addressVector());
      }
      if (a.has(QpAttributes.PATH_MTU)) NativeMemory.putInt(attr + Layout.QP_ATTR_PATH_MTU, a.pathMtu().code);
      if (a.has(QpAttributes.TIMEOUT)) putU8(attr + Layout.QP_ATTR_TIMEOUT, a.timeout());
      if (a.has(QpAttributes.RETRY_CNT)) putU8(attr + Layout.QP_ATTR_RETRY_CNT, a.retryCount());
      if (a.has(QpAttributes.RNR_RETRY)) putU8(attr + Layout.QP_ATTR_RNR_RETRY, a.rnrRetry());
      if (a.has(QpAttributes.RQ_PSN)) NativeMemory.putInt(attr + Layout.QP_ATTR_RQ_PSN, a.rqPsn());
      if (a.has(QpAttributes.SQ_PSN)) NativeMemory.putInt(attr + Layout.QP_ATTR_SQ_PSN, a.sqPsn());
      if (a.has(QpAttributes.MAX_QP_RD_ATOMIC)) putU8(attr + Layout.QP_ATTR_MAX_RD_ATOMIC, a.maxRdAtomic());
      if (a.has(QpAttributes.MAX_DEST_RD_ATOMIC)) {
        putU8(attr + Layout.QP_ATTR_MAX_DEST_RD_ATOMIC, a.maxDestRdAtomic());
      }
      if (a.has(QpAttributes.MIN_RNR_TIMER)) putU8(attr + Layout.QP_ATTR_MIN_RNR_TIMER, a.minRnrTimer());
      if (a.has(QpAttributes.DEST_QPN)) NativeMemory.putInt(attr + Layout.QP_ATTR_DEST_QP_NUM, a.destQpNum());
      QpState to = a.has(QpAttributes.STATE) ? a.state() : from;
      Verbs.modifyQp(handle, attr, mask, describe() + ": " + from + " -> " + to + " with "
          + QpAttributes.maskNames(mask));
      if (type == QpType.UD && a.has(QpAttributes.PORT)) readDatagramMtu(a.port());
    }
  }

  private void readDatagramMtu(int port) {
    try {
      datagramMtu = pd.context.queryPort(port).activeMtu().bytes;
    } catch (RuntimeException e) {
      datagramMtu = 0; // not checked: the device's to drop
    }
  }

  @Override
  public void postSend(SendRequests requests) {
    if (isClosed()) checkOpen("ibv_post_send");
    int n = requests.size();
    if (n == 0) return;
    long head = requests.linkForPost();
    int refused = type == QpType.RC ? -1 : firstRefusedOpcode(requests, n);
    int count = refused < 0 ? n : refused;
    int rc = 0;
    long bad = 0;
    if (count > 0) {
      if (count < n) { // post the ones before the refused request only
        NativeMemory.putLong(requests.requestAddress(count - 1) + RequestLayout.OFF_NEXT, 0L);
      }
      bad = Verbs.scratch(8);
      rc = Verbs.post(fnPostSend, handle, head, bad);
    }
    if (pd.type2Windows.get() > 0) noteWindowBinds(requests, rc == 0 ? count : badIndex(head, bad, RequestLayout.SEND_WR_SIZE, count));
    if (rc != 0) {
      long badWr = NativeMemory.getLong(bad); // read before anything else uses the scratch block
      throw postFailure("ibv_post_send", describe(), rc, head, badWr, RequestLayout.SEND_WR_SIZE, n,
          requests::wrId, requests, sendLimits());
    }
    if (refused >= 0) {
      String which = describe() + ": request " + refused + " of " + n + " (wr_id "
          + requests.wrId(refused) + ", " + requests.opcode(refused) + ")";
      String rest = "; it and the " + (n - refused - 1) + " after it were not posted";
      String over = Checks.overMtu(RequestLayout.requestLength(requests.requestAddress(refused)),
          datagramMtu);
      if (type.allows(requests.opcode(refused)) && over != null) {
        throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which + ": " + over
            + " (its port's active MTU): a UD message is one packet, and a device drops a longer"
            + " one without an error" + rest);
      }
      throw new RdmaException("ibv_post_send", RdmaException.EINVAL, which
          + " is not allowed on a " + type + " QP" + rest);
    }
  }

  /**
   * The first request this QP type refuses: an opcode it does not have ({@link QpType#allows}),
   * or on UD a datagram longer than the path MTU (which the spec has a device drop silently,
   * rxe completing it as sent).
   */
  private int firstRefusedOpcode(SendRequests requests, int n) {
    int mtu = type == QpType.UD ? datagramMtu : 0;
    for (int i = 0; i < n; i++) {
      long wr = requests.requestAddress(i);
      int op = NativeMemory.getInt(wr + RequestLayout.OFF_OPCODE);
      // an opcode we do not know is the driver's to refuse
      if (op >= 0 && op <= WrOpcode.SEND_WITH_INV.code && !type.allows(WrOpcode.of(op))) {
        return i;
      }
      if (Checks.overMtu(RequestLayout.requestLength(wr), mtu) != null) return i;
    }
    return -1;
  }

  private static int badIndex(long head, long badSlot, int wrSize, int n) {
    long bad = badSlot == 0 ? 0 : NativeMemory.getLong(badSlot);
    if (bad == 0) return 0;
    long i = (bad - head) / wrSize;
    return i < 0 || i > n ? 0 : (int) i;
  }

  /**
   * A posted BIND_MW gives a type-2 window the request's rkey: keep {@code ibv_mw.rkey} current
   * (drivers update it for ibv_bind_mw only), so that {@link MemoryWindow#rkey} is the key to
   * increment for the next bind.
   */
  private static void noteWindowBinds(SendRequests requests, int posted) {
    for (int i = 0; i < posted; i++) {
      long wr = requests.requestAddress(i);
      if (NativeMemory.getInt(wr + RequestLayout.OFF_OPCODE) == WrOpcode.BIND_MW.code) {
        long mw = NativeMemory.getLong(wr + RequestLayout.OFF_BIND_MW);
        if (mw != 0) {
          NativeMemory.putInt(mw + Layout.MW_RKEY, NativeMemory.getInt(wr + RequestLayout.OFF_BIND_RKEY));
        }
      }
    }
  }

  /** For failure messages (the slow path only): the state and the send queue's limits. */
  private String sendLimits() {
    return "QP in " + stateOrUnknown() + "; maxSendWr " + caps.maxSendWr() + ", maxSendSge "
        + caps.maxSendSge() + ", maxInlineData " + caps.maxInlineData();
  }

  private String recvLimits() {
    return "QP in " + stateOrUnknown() + "; maxRecvWr " + caps.maxRecvWr() + ", maxRecvSge "
        + caps.maxRecvSge();
  }

  private String stateOrUnknown() {
    try {
      return state().toString();
    } catch (RuntimeException e) {
      return "an unknown state";
    }
  }

  @Override
  public void postRecv(RecvRequests requests) {
    if (isClosed()) checkOpen("ibv_post_recv");
    if (srq != null) {
      throw new RdmaException("ibv_post_recv", RdmaException.EINVAL,
          describe() + " receives through its SRQ: post there");
    }
    int n = requests.size();
    if (n == 0) return;
    long head = requests.linkForPost();
    long bad = Verbs.scratch(8);
    int rc = Verbs.post(fnPostRecv, handle, head, bad);
    if (rc != 0) {
      long badWr = NativeMemory.getLong(bad);
      throw postFailure("ibv_post_recv", describe(), rc, head, badWr, RequestLayout.RECV_WR_SIZE, n,
          requests::wrId, null, recvLimits());
    }
  }

  /** The exception for a failed post: which request failed, and that none from it on was posted. */
  static RdmaException postFailure(String verb, String queue, int rc, long head, long bad,
      int wrSize, int n, IntToLongFunction wrId, SendRequests sends, String limits) {
    int index = bad == 0 ? -1 : (int) ((bad - head) / wrSize);
    String which;
    if (index >= 0 && index < n) {
      which = "request " + index + " of " + n + " (wr_id " + wrId.applyAsLong(index)
          + (sends != null ? ", " + sends.opcode(index) : "")
          + ") failed; it and the " + (n - index - 1) + " after it were not posted";
    } else {
      which = "a batch of " + n + " request(s) failed";
    }
    return Verbs.fail(verb, rc, queue + ": " + which + " (" + limits + ")");
  }

  @Override
  public int bindMemoryWindow(MemoryWindow mw, long wrId, int sendFlags, MemoryRegion mr,
      long address, long length, int access) {
    checkOpen("ibv_bind_mw");
    if (!(mw instanceof NativeMw)) {
      throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL, "not a native memory window");
    }
    NativeMw w = (NativeMw) mw;
    w.checkOpen("ibv_bind_mw");
    // the checks verbs.h's inline ibv_bind_mw makes before calling the driver
    if (w.type() != MemoryWindow.Type.TYPE_1) {
      throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL,
          "ibv_bind_mw binds type-1 windows; bind a type-2 window with a BIND_MW send request");
    }
    NativeMr m = null;
    if (mr != null) {
      if (!(mr instanceof NativeMr)) {
        throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL, "not a native memory region");
      }
      m = (NativeMr) mr;
      m.checkOpen("ibv_bind_mw");
      if (m.pd != w.pd) {
        throw new RdmaException("ibv_bind_mw", RdmaException.EPERM,
            "the window and the region are in different protection domains");
      }
    } else if (address != 0 || length != 0) {
      throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL,
          "no region given but address/length are not 0");
    } else {
      // unbinding: verbs.h allows a NULL region, but drivers such as rxe read the region's lkey
      // unconditionally; name the region it is bound to, with length 0, which means the same
      m = w.boundTo;
      if (m == null || m.isClosed()) {
        throw new RdmaException("ibv_bind_mw", RdmaException.EINVAL,
            w.describe() + " is not bound: nothing to unbind");
      }
      address = m.address();
    }
    synchronized (this) {
      NativeMemory.zero(mwBind, Layout.MW_BIND_SIZE);
      NativeMemory.putLong(mwBind + Layout.MW_BIND_WR_ID, wrId);
      NativeMemory.putInt(mwBind + Layout.MW_BIND_SEND_FLAGS, sendFlags);
      NativeMemory.putLong(mwBind + Layout.MW_BIND_MR, m == null ? 0 : m.handle);
      NativeMemory.putLong(mwBind + Layout.MW_BIND_ADDR, address);
      NativeMemory.putLong(mwBind + Layout.MW_BIND_LENGTH, length);
      NativeMemory.putInt(mwBind + Layout.MW_BIND_ACCESS, access);
      int rc = Verbs.bindMw(pd.context.handle, handle, w.handle, mwBind);
      if (rc != 0) {
        throw Verbs.fail("ibv_bind_mw", rc, describe() + ": binding " + w.describe()
            + " to " + length + " bytes at 0x" + Long.toHexString(address));
      }
    }
    NativeMr old = w.boundTo;
    if (old != null) old.boundWindows.remove(w);
    if (m != null && length > 0) {
      m.boundWindows.add(w);
      w.boundTo = m;
    } else {
      w.boundTo = null;
    }
    return w.rkey();
  }

  // ---------------------------------------------------------------- ibv_ah_attr

  static void writeAhAttr(long p, AddressVector av) {
    putU16(p + Layout.AH_ATTR_DLID, av.dlid());
    putU8(p + Layout.AH_ATTR_SL, av.serviceLevel());
    putU8(p + Layout.AH_ATTR_PORT_NUM, av.portNum());
    if (av.global()) {
      putU8(p + Layout.AH_ATTR_IS_GLOBAL, 1);
      byte[] dgid = (av.dgid() == null ? Gid.ZERO : av.dgid()).toBytes();
      NativeMemory.copyFromArray(dgid, 0, p + Layout.AH_ATTR_GRH_DGID, dgid.length);
      NativeMemory.putInt(p + Layout.AH_ATTR_GRH_FLOW_LABEL, av.flowLabel());
      putU8(p + Layout.AH_ATTR_GRH_SGID_INDEX, av.sgidIndex());
      putU8(p + Layout.AH_ATTR_GRH_HOP_LIMIT, av.hopLimit());
      putU8(p + Layout.AH_ATTR_GRH_TRAFFIC_CLASS, av.trafficClass());
    }
  }

  static AddressVector readAhAttr(long p) {
    byte[] dgid = new byte[Layout.GID_SIZE];
    NativeMemory.copyToArray(p + Layout.AH_ATTR_GRH_DGID, dgid, 0, dgid.length);
    return new AddressVector(u16(p + Layout.AH_ATTR_DLID), u8(p + Layout.AH_ATTR_SL),
        u8(p + Layout.AH_ATTR_PORT_NUM), u8(p + Layout.AH_ATTR_IS_GLOBAL) != 0, Gid.of(dgid),
        u8(p + Layout.AH_ATTR_GRH_SGID_INDEX), u8(p + Layout.AH_ATTR_GRH_HOP_LIMIT),
        u8(p + Layout.AH_ATTR_GRH_TRAFFIC_CLASS),
        NativeMemory.getInt(p + Layout.AH_ATTR_GRH_FLOW_LABEL));
  }

  static int u8(long p) {
    return NativeMemory.getByte(p) & 0xff;
  }

  static int u16(long p) {
    return NativeDeviceContext.u16(p);
  }

  static void putU8(long p, int v) {
    NativeMemory.putByte(p, (byte) v);
  }

  static void putU16(long p, int v) {
    NativeMemory.putByte(p, (byte) v);
    NativeMemory.putByte(p + 1, (byte) (v >>> 8));
  }

  @Override
  public String toString() {
    return describe();
  }
}
