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
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import dev.pekkordma.verbs.abi.RequestLayout;

/**
 * A QP's responder and receive queue: executes its peer's requests against the PD's memory.
 * A request is checked under the QP's monitor (PSN, access, keys, a receive taken), its data is
 * placed outside it, one fenced chunk at a time, as a NIC places packets while the owner posts
 * and polls, and it is settled (acknowledged, the receive completed) under the monitor again.
 * Nothing is placed before every byte's destination was checked against a live registration.
 */
final class Responder {
  static final int GRH_BYTES = 40;
  // admit's decisions besides a NAK code
  private static final int PLACE = -1;
  private static final int ANSWERED = -2;

  private final SoftQp qp;
  final ReceiveRing rq; // null with an SRQ
  // guarded by qp
  private int epsn;
  private boolean commEstablished;
  /** A request's data is being placed outside the monitor: another one for the QP is dropped. */
  private boolean placing;
  // the request being placed (valid while placing)
  private WrOpcode pendingOp;
  private long pendingWrId;
  private int pendingD;
  /** The READs and atomics answered last, for answering their repeats. */
  private final ResponderResources resources = new ResponderResources();

  // reused: under the monitor, or by the one placement in progress
  private final Segments target;
  private final Segments grh = new Segments(1);
  private final OffHeapBuffer grhMemory = OffHeapBuffer.allocate(GRH_BYTES);
  private final byte[] grhBytes = new byte[GRH_BYTES];

  Responder(SoftQp qp) {
    this.qp = qp;
    this.rq = qp.srq == null ? new ReceiveRing(qp.caps.maxRecvWr(), qp.caps.maxRecvSge()) : null;
    this.target = new Segments(qp.srq != null ? qp.srq.ring.maxSge() : qp.caps.maxRecvSge());
  }

  // ---------------------------------------------------------------- state changes (monitor)

  /** INIT to RTR: requests are expected from the receive PSN on. */
  void start(int rqPsn) {
    epsn = rqPsn;
    commEstablished = false;
    resources.clear();
  }

  void reset() {
    if (rq != null) rq.clear();
    commEstablished = false;
  }

  /** Every posted receive completes WR_FLUSH_ERR (the QP is in ERR). */
  void flush() {
    if (rq != null) {
      while (!rq.isEmpty()) {
        qp.recvCq.push(rq.headWrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, qp.qpn, 0, 0,
            false);
        rq.pop();
      }
    } else {
      qp.context.raise(AsyncEvent.ofQp(AsyncEventType.QP_LAST_WQE_REACHED, qp));
    }
  }

  void postRecv(RecvRequests requests, int i) {
    rq.push(requests, i);
  }

  // ---------------------------------------------------------------- RC and UC requests

  /**
   * Executes a peer's request (RC; a UC message with {@code connectedDatagram}) against this QP
   * and its PD's memory. RC requests are answered through {@code r}: filled before returning;
   * an RDMA READ leaves where its data lies in {@code r.readSource}, for whoever answers to copy.
   */
  void handleRequest(SoftPeer.RequestHeader h, Payload payload, SoftPeer.Response r,
      boolean connectedDatagram) {
    PortTally tally = qp.device.portTally;
    tally.packetsReceived.increment();
    DeferredWork signals = DeferredWork.enter();
    try {
      serve(h, payload, r, connectedDatagram);
    } finally {
      signals.exit();
    }
    // whoever carries it back (in memory or on the fabric), the answer leaves this port
    if (!connectedDatagram && r.code != DROPPED) tally.packetsSent.increment();
  }

  private void serve(SoftPeer.RequestHeader h, Payload payload, SoftPeer.Response r,
      boolean uc) {
    r.psn = h.psn;
    r.code = DROPPED;
    r.readLength = 0;
    r.readSource.clear();
    int decision;
    int generation = 0;
    AsyncEventType event = null;
    synchronized (qp) {
      decision = admit(h, payload.length(), r, uc);
      if (decision == PLACE) {
        placing = true;
        generation = qp.fence.generation();
      } else if (decision != DROPPED && decision != ANSWERED) {
        event = settle(decision, pendingD, r);
      }
    }
    if (decision != PLACE) {
      payload.finish(); // outside the monitor: a slow sender must not hold the QP
      if (event != null) qp.context.raise(AsyncEvent.ofQp(event, qp));
      return;
    }
    place(h, payload, r, generation, uc);
  }

  /**
   * Decides a request under the monitor: {@link #PLACE} (its destination checked into {@link
   * #target}), {@link #ANSWERED} ({@code r} is final), DROPPED, or a NAK to settle.
   */
  private int admit(SoftPeer.RequestHeader h, long len, SoftPeer.Response r, boolean uc) {
    if (!accepts(h, uc) || placing) return DROPPED;
    if (qp.state == QpState.RTR && !commEstablished) {
      commEstablished = true;
      qp.context.raise(AsyncEvent.ofQp(AsyncEventType.COMM_EST, qp));
    }
    WrOpcode op = WrOpcode.of(h.opcode);
    int d = uc ? 0 : ((h.psn - epsn) << 8) >> 8;
    pendingD = d;
    pendingOp = op;
    if (d > 0) { // after a NAK the rest are dropped until the retry
      qp.device.portTally.outOfSequenceRequests.increment();
      return DROPPED;
    }
    target.clear();
    if (d < 0) return repeat(op, h, r);
    int code;
    switch (op) {
      case RDMA_WRITE:
      case RDMA_WRITE_WITH_IMM:
        code = admitWrite(h, len);
        break;
      case SEND:
      case SEND_WITH_IMM:
      case SEND_WITH_INV:
        if (!receiveAvailable()) {
          r.rnrTimer = qp.minRnrTimer;
          code = RNR_NAK;
          break;
        }
        code = takeReceive(h, len, 0);
        if (code != ACK && uc) qp.toErrorLocked();
        break;
      default:
        if (uc) return DROPPED;
        code = respondInPlace(op, h, r, true);
        if (code == ACK) { // a READ or an atomic: nothing to place here
          settle(ACK, d, r);
          return ANSWERED;
        }
    }
    if (code == ACK) return PLACE;
    return uc ? DROPPED : code; // UC drops what it cannot take
  }

  /** Places an accepted request's data outside the monitor, then settles it under it. */
  private void place(SoftPeer.RequestHeader h, Payload payload, SoftPeer.Response r,
      int generation, boolean uc) {
    long len = payload.length();
    int copied = Segments.OWNER_GONE;
    boolean whole = false;
    AsyncEventType event = null;
    try {
      copied = payload.copyTo(target, 0, len, qp.fence, generation);
      whole = payload.finish();
    } finally {
      synchronized (qp) {
        placing = false;
        if (qp.fence.generation() == generation && accepts(h, uc)) {
          event = settlePlaced(h, r, copied, whole, len, uc);
        }
      }
    }
    if (event != null) qp.context.raise(AsyncEvent.ofQp(event, qp));
  }

  private AsyncEventType settlePlaced(SoftPeer.RequestHeader h, SoftPeer.Response r, int copied,
      boolean whole, long len, boolean uc) {
    WrOpcode op = pendingOp;
    boolean send = op.isSend();
    if (!whole || copied == Segments.SOURCE_GONE) {
      // the sender's memory went away mid-message: it fails the request itself
      if (send) {
        qp.recvCq.push(pendingWrId, WcStatus.REM_ABORT_ERR, WcOpcode.RECV, 0, 0, qp.qpn,
            h.srcQpn, 0, false);
        qp.toErrorLocked();
      }
      return null;
    }
    if (copied != Segments.COPIED) { // our memory went away mid-message
      if (send) {
        qp.recvCq.push(pendingWrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, qp.qpn,
            h.srcQpn, 0, false);
      }
      if (uc) return null;
      return settle(send ? NAK_REMOTE_OPERATION : NAK_REMOTE_ACCESS, pendingD, r);
    }
    int code = ACK;
    if (send) {
      completeSend(op, h, pendingWrId, len, 0);
    } else if (op == WrOpcode.RDMA_WRITE_WITH_IMM) {
      code = receiveWriteImmediate(h, len, r);
    }
    return uc ? null : settle(code, pendingD, r);
  }

  boolean accepts(SoftPeer.RequestHeader h, boolean uc) {
    QpState s = qp.state;
    return !qp.isClosed() && qp.type == (uc ? QpType.UC : QpType.RC) && h.srcQpn == qp.destQpn
        && qp.isPeer(h.srcGid)
        && (s == QpState.RTR || s == QpState.RTS || s == QpState.SQD || s == QpState.SQE);
  }

  /** The response's code; on a NAK the QP goes to the error state, whose event is returned. */
  private AsyncEventType settle(int code, int d, SoftPeer.Response r) {
    r.code = code;
    if (code == ACK) {
      if (d == 0) epsn = (epsn + 1) & 0xffffff;
      return null;
    }
    if (code == RNR_NAK) {
      qp.device.portTally.rnrNaksSent.increment();
      return null;
    }
    qp.toErrorLocked();
    return code == NAK_REMOTE_ACCESS ? AsyncEventType.QP_ACCESS_ERR : AsyncEventType.QP_REQ_ERR;
  }

  /** ACK when this QP takes a write of {@code len} bytes at the request's address and rkey. */
  private int admitWrite(SoftPeer.RequestHeader h, long len) {
    if ((qp.accessFlags & Access.REMOTE_WRITE) == 0) return NAK_INVALID_REQUEST;
    if (len > 0 && !grantRemote(h.rkey, h.remoteAddress, len, Access.REMOTE_WRITE, target)) {
      return NAK_REMOTE_ACCESS;
    }
    return ACK;
  }

  /**
   * A WRITE WITH IMM's data is placed: it takes a receive. An RNR NAK leaves the data placed,
   * as a NIC leaves a multi-packet write's first packets; the retry places it again.
   */
  private int receiveWriteImmediate(SoftPeer.RequestHeader h, long len, SoftPeer.Response r) {
    synchronized (receiveLock()) {
      if (!receiveAvailable()) {
        r.rnrTimer = qp.minRnrTimer;
        return RNR_NAK;
      }
      long wrId = popReceive();
      qp.recvCq.push(wrId, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) len,
          h.immOrRkeyBigEndian, qp.qpn, h.srcQpn, WorkCompletions.FLAG_WITH_IMM,
          (h.sendFlags & SendRequests.SOLICITED) != 0);
    }
    return ACK;
  }

  /**
   * A repeat of a request answered already (its answer was lost, or someone replays it): a WRITE
   * or a SEND is acknowledged again and not placed again; a READ or an atomic is answered only
   * from the responder resources, else dropped (a READ) or refused (an atomic), as rxe does.
   */
  private int repeat(WrOpcode op, SoftPeer.RequestHeader h, SoftPeer.Response r) {
    qp.device.portTally.duplicateRequests.increment();
    if (op == WrOpcode.RDMA_READ) {
      if (!resources.answeredRead(h.psn, h.rkey, h.remoteAddress, h.readLength)) return DROPPED;
      int code = respondInPlace(op, h, r, false);
      if (code != ACK) return code;
    } else if (op.isAtomic()) {
      if (!resources.answeredAtomic(h.psn)) {
        r.code = NAK_INVALID_REQUEST;
        return ANSWERED;
      }
      r.atomicValue = resources.result(h.psn);
    }
    r.code = ACK;
    return ANSWERED;
  }

  /**
   * An RDMA READ's or an atomic's answer, which places nothing here; a {@code first} execution
   * (not a repeat) is kept in the responder resources.
   */
  private int respondInPlace(WrOpcode op, SoftPeer.RequestHeader h, SoftPeer.Response r,
      boolean first) {
    switch (op) {
      case RDMA_READ: {
        if ((qp.accessFlags & Access.REMOTE_READ) == 0) return NAK_INVALID_REQUEST;
        if (h.readLength > 0
            && !grantRemote(h.rkey, h.remoteAddress, h.readLength, Access.REMOTE_READ, r.readSource)) {
          return NAK_REMOTE_ACCESS;
        }
        r.readLength = h.readLength;
        if (first) resources.read(h.psn, h.rkey, h.remoteAddress, h.readLength);
        return ACK;
      }
      case ATOMIC_CMP_AND_SWP:
      case ATOMIC_FETCH_AND_ADD: {
        if ((qp.accessFlags & Access.REMOTE_ATOMIC) == 0) return NAK_INVALID_REQUEST;
        if ((h.remoteAddress & 7) != 0) return NAK_INVALID_REQUEST;
        if (!grantRemote(h.rkey, h.remoteAddress, 8, Access.REMOTE_ATOMIC, target)) {
          return NAK_REMOTE_ACCESS;
        }
        if (!target.enter(0)) return NAK_REMOTE_ACCESS; // deregistered since the check
        try {
          r.atomicValue = op == WrOpcode.ATOMIC_CMP_AND_SWP
              ? NativeMemory.compareAndSwapLong(h.remoteAddress, h.compareAdd, h.swap)
              : NativeMemory.fetchAndAddLong(h.remoteAddress, h.compareAdd);
        } finally {
          target.exit(0);
        }
        resources.atomic(h.psn, r.atomicValue);
        return ACK;
      }
      default:
        return NAK_INVALID_REQUEST;
    }
  }

  // ---------------------------------------------------------------- receives (monitor)

  /**
   * Takes the head receive (its wr_id into {@link #pendingWrId}) for a message of {@code len}
   * bytes after {@code prefix} bytes (the UD GRH), and checks its scatter list into {@link
   * #target}. Returns ACK, or the NAK after completing it LOC_PROT_ERR (a bad lkey: remote
   * operation error) or LOC_LEN_ERR (too small: invalid request).
   */
  private int takeReceive(SoftPeer.RequestHeader h, long len, int prefix) {
    synchronized (receiveLock()) {
      ReceiveRing ring = ring();
      long wrId = ring.headWrId();
      long sges = ring.headSges();
      int n = ring.headNumSge();
      target.clear();
      boolean protOk = true;
      for (int k = 0; k < n; k++) {
        long addr = RequestLayout.sgeAddress(sges, k);
        long l = RequestLayout.sgeLength(sges, k);
        int lkey = RequestLayout.sgeLkey(sges, k);
        if (!qp.grantLocal(lkey, addr, l, true, target)) {
          protOk = false;
          break;
        }
      }
      popReceive();
      pendingWrId = wrId;
      if (!protOk) {
        qp.recvCq.push(wrId, WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, qp.qpn, h.srcQpn, 0,
            false);
        return NAK_REMOTE_OPERATION;
      }
      if (len + prefix > target.total()) {
        qp.recvCq.push(wrId, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, qp.qpn, h.srcQpn, 0,
            false);
        return NAK_INVALID_REQUEST;
      }
      return ACK;
    }
  }

  /** Completes a send's receive once its data is in place. */
  private void completeSend(WrOpcode op, SoftPeer.RequestHeader h, long wrId, long len,
      int prefix) {
    int flags = prefix > 0 ? WorkCompletions.FLAG_GRH : 0;
    int imm = 0;
    if (op == WrOpcode.SEND_WITH_IMM) {
      flags |= WorkCompletions.FLAG_WITH_IMM;
      imm = h.immOrRkeyBigEndian;
    } else if (op == WrOpcode.SEND_WITH_INV) {
      Object o = qp.device.memoryKeys.get(h.immOrRkeyBigEndian);
      if (!(o instanceof SoftMw) || ((SoftMw) o).type != MemoryWindow.Type.TYPE_2
          || ((SoftMw) o).pd != qp.pd) {
        qp.recvCq.push(wrId, WcStatus.REM_INV_REQ_ERR, WcOpcode.RECV, 0, 0, qp.qpn, h.srcQpn, 0,
            false);
        return;
      }
      ((SoftMw) o).invalidate();
      flags |= WorkCompletions.FLAG_WITH_INV;
      imm = h.immOrRkeyBigEndian;
    }
    qp.recvCq.push(wrId, WcStatus.SUCCESS, WcOpcode.RECV, (int) (len + prefix), imm, qp.qpn,
        h.srcQpn, flags, (h.sendFlags & SendRequests.SOLICITED) != 0);
  }

  /** Held from finding a receive to taking it: an SRQ is shared by other QPs' responders. */
  private Object receiveLock() {
    return qp.srq != null ? qp.srq : qp;
  }

  private ReceiveRing ring() {
    return qp.srq != null ? qp.srq.ring : rq;
  }

  private boolean receiveAvailable() {
    synchronized (receiveLock()) {
      return !ring().isEmpty();
    }
  }

  /** Pops the head receive and returns its wr_id (the receive lock is held). */
  private long popReceive() {
    ReceiveRing ring = ring();
    long id = ring.headWrId();
    ring.pop();
    if (qp.srq != null) qp.srq.afterTake(qp.context);
    return id;
  }

  /** Checks an rkey grants {@code needed} on {@code [addr, addr+len)} to this QP. */
  private boolean grantRemote(int rkey, long addr, long len, int needed, Segments into) {
    Object o = qp.device.memoryKeys.get(rkey);
    if (o instanceof SoftMr) {
      SoftMr mr = (SoftMr) o;
      return mr.pd == qp.pd && mr.grant(addr, len, needed, into);
    }
    if (o instanceof SoftMw) {
      SoftMw mw = (SoftMw) o;
      return mw.pd == qp.pd && mw.grant(addr, len, needed, qp, into);
    }
    return false;
  }

  // ---------------------------------------------------------------- UD datagrams

  /**
   * A UD datagram: no answer; a wrong Q_Key, a missing receive or a bad one drops it. Its data
   * is at most an MTU and already in memory, so it is placed under the monitor.
   */
  void handleDatagram(SoftPeer.RequestHeader h, Payload payload) {
    qp.device.portTally.packetsReceived.increment();
    DeferredWork signals = DeferredWork.enter();
    try {
      synchronized (qp) {
        serveDatagram(h, payload);
      }
    } finally {
      signals.exit();
    }
  }

  private void serveDatagram(SoftPeer.RequestHeader h, Payload payload) {
    QpState s = qp.state;
    WrOpcode op = WrOpcode.of(h.opcode);
    long len = payload.length();
    if (qp.isClosed() || qp.type != QpType.UD || h.qkey != qp.qkey || !op.isSend()
        || !(s == QpState.RTR || s == QpState.RTS || s == QpState.SQD || s == QpState.SQE)) {
      payload.finish();
      return;
    }
    synchronized (receiveLock()) {
      if (!receiveAvailable()) {
        payload.finish();
        return;
      }
      if (takeReceive(h, len, GRH_BYTES) != ACK) {
        payload.finish();
        qp.toErrorLocked();
        return;
      }
      long wrId = pendingWrId;
      int generation = qp.fence.generation();
      int copied = writeGrh(h, generation);
      if (copied == Segments.COPIED) {
        copied = payload.copyTo(target, GRH_BYTES, len, qp.fence, generation);
      }
      boolean whole = payload.finish();
      if (copied == Segments.COPIED && whole) {
        completeSend(op, h, wrId, len, GRH_BYTES);
      } else {
        qp.recvCq.push(wrId, whole && copied != Segments.SOURCE_GONE ? WcStatus.LOC_PROT_ERR
            : WcStatus.REM_ABORT_ERR, WcOpcode.RECV, 0, 0, qp.qpn, h.srcQpn, 0, false);
        qp.toErrorLocked();
      }
    }
  }

  private int writeGrh(SoftPeer.RequestHeader h, int generation) {
    // a GRH's source GID at bytes 8..23, destination GID at 24..39
    byte[] b = grhBytes;
    b[0] = 0x60;
    System.arraycopy(h.srcGid, 0, b, 8, 16);
    if (h.dgid != null) System.arraycopy(h.dgid, 0, b, 24, 16);
    else for (int i = 0; i < 16; i++) b[24 + i] = qp.device.gid.byteAt(i);
    grhMemory.put(0, b, 0, GRH_BYTES);
    grh.single(grhMemory.address(), GRH_BYTES);
    return Segments.copy(grh, 0, target, 0, GRH_BYTES, qp.fence, generation);
  }

  void close() {
    if (rq != null) rq.close();
    grhMemory.close();
  }
}
