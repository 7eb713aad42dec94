package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.CompletionHub;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import dev.pekkordma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a datagram endpoint (an actor, a stage) registers and creates on the device its CM id is
 * on, once: a CQ of the device's completion hub, a PD, one registered area within the runtime's
 * memory budget (receive slots of MTU + GRH, then send slots of MTU), a shared receive queue
 * when several QPs take receives, and the QP. The work request batches are made here once and
 * reused. {@link #close} frees in order: QP, the caller's address handles, SRQ, CQ, MR, PD,
 * memory, the budget's bytes, the hub. The owner's thread alone calls it.
 */
@InternalApi
public final class UdResources {
  private static final Logger log = LoggerFactory.getLogger(UdResources.class);
  /** Send work requests' ids are this plus the send slot; receives' are the receive slot. */
  public static final long SEND_TAG = 1L << 40;

  public final DeviceContext context;
  public final int port;
  public final int mtu;
  /** A receive slot's bytes: the GRH's and the MTU's. */
  public final int receiveSize;
  public final int receives;
  public final int sends;
  private final RdmaRuntime runtime;
  private CompletionHub hub;
  private ProtectionDomain pd;
  private CompletionQueue cq;
  private SharedReceiveQueue srq;
  private QueuePair qp;
  private Runnable destroyQp;
  private MemoryBudget.Reservation reserved;
  private OffHeapBuffer memory;
  private MemoryRegion mr;
  /** The receive area, for reading; the send area, for writing; reused, never handed out. */
  private ByteBuffer receiveView;
  private ByteBuffer sendView;
  private RecvRequests recvWr;
  private SendRequests sendWr;
  private boolean closed;

  private UdResources(RdmaRuntime runtime, DeviceContext context, int port, int receives,
      int sends) {
    this.runtime = runtime;
    this.context = context;
    this.port = port;
    this.mtu = context.queryPort(port).activeMtu().bytes;
    this.receiveSize = mtu + DatagramFormat.GRH_BYTES;
    this.receives = receives;
    this.sends = sends;
  }

  /**
   * Opens everything, or frees what it opened and rethrows. The area's bytes are reserved for
   * {@code purpose}, a refusal naming {@code setting}; {@code makeCq} makes the CQ on the hub
   * (polled by it, or woken by it) for so many entries; {@code makeQp} makes the QP (by verbs,
   * or by a CM id), {@code destroyQp} destroys it; with {@code shared} the QP takes its receives
   * from a shared receive queue others may join.
   */
  public static UdResources open(RdmaRuntime runtime, DeviceContext context, int port,
      int receives, int sends, boolean shared, String purpose, String setting,
      BiFunction<CompletionHub, Integer, CompletionQueue> makeCq,
      BiFunction<ProtectionDomain, QpInitAttributes, QueuePair> makeQp,
      Function<QueuePair, Runnable> destroyQp) {
    UdResources r = new UdResources(runtime, context, port, receives, sends);
    try {
      long bytes = (long) receives * r.receiveSize + (long) sends * r.mtu;
      r.reserved = runtime.memory().reserve(bytes, purpose, setting);
      r.hub = runtime.hubs().acquire(context);
      r.pd = context.allocPd();
      r.memory = OffHeapBuffer.allocate(bytes);
      r.mr = r.pd.registerMemory(r.memory, Access.LOCAL_WRITE);
      long receiveBytes = (long) receives * r.receiveSize;
      r.receiveView = r.memory.view(0, (int) receiveBytes);
      r.sendView = r.memory.view((int) receiveBytes, (int) (bytes - receiveBytes));
      r.recvWr = new RecvRequests(receives, 1);
      r.sendWr = new SendRequests(sends, 1);
      r.cq = makeCq.apply(r.hub, receives + sends);
      if (shared) r.srq = r.pd.createSrq(new SrqAttributes(receives, 1, 0));
      r.qp = makeQp.apply(r.pd, r.attributes(sends));
      r.destroyQp = destroyQp.apply(r.qp);
      return r;
    } catch (RuntimeException e) {
      r.close(() -> {});
      throw e;
    }
  }

  /**
   * A UD QP made by verbs on {@code port} and moved to RTS as librdmacm moves a UDP id's, with
   * the UDP port space's Q_Key: for an endpoint whose CM id only listens or resolves.
   */
  public static QueuePair verbsQp(ProtectionDomain pd, QpInitAttributes attributes, int port) {
    QueuePair qp = pd.createQp(attributes);
    try {
      qp.modify(QpAttributes.toInitUd(port, UdParameters.UDP_QKEY));
      qp.modify(new QpAttributes().state(QpState.RTR));
      qp.modify(new QpAttributes().state(QpState.RTS).sqPsn(0));
      return qp;
    } catch (RuntimeException e) {
      qp.close();
      throw e;
    }
  }

  public ProtectionDomain pd() {
    return pd;
  }

  public CompletionQueue cq() {
    return cq;
  }

  public QueuePair qp() {
    return qp;
  }

  /** A QP's attributes on these resources; an endpoint's other QPs send little. */
  public QpInitAttributes attributes(int sendDepth) {
    QpInitAttributes a = QpInitAttributes.of(QpType.UD, cq, cq).maxSendWr(sendDepth);
    return srq != null ? a.srq(srq) : a.maxRecvWr(receives);
  }

  /**
   * The receive area, slot {@code i} at {@code i * receiveSize}: for {@link
   * DatagramFormat#sourceGid}, which checks where it reads.
   */
  public ByteBuffer receiveArea() {
    return receiveView;
  }

  /** Queues a receive into {@code slot}; {@link #flushReceives} posts the queued ones. */
  public void addReceive(int slot) {
    recvWr.add(slot).sge(mr, (long) slot * receiveSize, receiveSize);
  }

  /** Receives queued and not yet posted. */
  public int receivesQueued() {
    return recvWr.size();
  }

  public void flushReceives() {
    if (recvWr.size() == 0) return;
    try {
      if (srq != null) srq.postRecv(recvWr); else qp.postRecv(recvWr);
    } finally {
      recvWr.clear();
    }
  }

  /** {@code length} bytes at {@code offset} of receive slot {@code slot}, copied. */
  public ByteString copyOut(int slot, int offset, int length) {
    int at = slot * receiveSize + offset;
    receiveView.limit(at + length).position(at);
    ByteString b = ByteString.fromByteBuffer(receiveView);
    receiveView.clear();
    return b;
  }

  /** Copies {@code data} into send slot {@code slot} and queues its send. */
  public void addSend(int slot, ByteString data, AddressHandle ah, int qpn, int qkey) {
    int at = slot * mtu;
    sendView.limit(at + data.size()).position(at);
    data.copyToBuffer(sendView);
    sendView.clear();
    sendWr.add(SEND_TAG + slot, WrOpcode.SEND, SendRequests.SIGNALED)
        .sge(mr, (long) receives * receiveSize + at, data.size()).ud(ah, qpn, qkey);
  }

  /** Sends queued and not yet posted. */
  public int sendsQueued() {
    return sendWr.size();
  }

  public void flushSends() {
    if (sendWr.size() == 0) return;
    try {
      qp.postSend(sendWr);
    } finally {
      sendWr.clear();
    }
  }

  /**
   * Frees everything once, in order: the QP (the caller's other QPs on these resources are gone
   * already), {@code afterQps} (the caller's address handles), SRQ, CQ, MR, PD, memory, the
   * budget's bytes, the hub.
   */
  public void close(Runnable afterQps) {
    if (closed) return;
    closed = true;
    if (destroyQp != null) quietly(destroyQp);
    quietly(afterQps);
    if (srq != null) quietly(srq::close);
    if (cq != null) hub.closeCq(cq);
    if (mr != null) quietly(mr::close);
    if (pd != null) quietly(pd::close);
    if (memory != null) memory.close();
    if (reserved != null) reserved.close();
    if (hub != null) runtime.hubs().release(hub);
    if (recvWr != null) recvWr.close();
    if (sendWr != null) sendWr.close();
  }

  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("freeing a datagram resource failed: {}", e.getMessage());
    }
  }
}
