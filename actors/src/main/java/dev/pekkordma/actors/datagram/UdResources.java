package dev.pekkordma.actors.datagram;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.CompletionHandler;
import dev.pekkordma.runtime.CompletionHub;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
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

/**
 * What a datagram actor registers and creates, once per incarnation, on the device its CM id
 * is on: the hub's polled CQ, a PD, one registered area (receive slots of MTU + GRH, then send
 * slots of MTU), optionally a shared receive queue for several QPs, and its QP. {@link #close}
 * frees them in order: QP, SRQ, CQ, MR, PD, memory, the budget's bytes, the hub.
 */
final class UdResources {
  static final long SEND_TAG = 1L << 40;

  final DeviceContext context;
  final int mtu;
  final int receiveSize;
  final int receives;
  final int sends;
  private final RdmaRuntime runtime;
  private CompletionHub hub;
  ProtectionDomain pd;
  CompletionQueue cq;
  SharedReceiveQueue srq;
  QueuePair qp;
  private Runnable destroyQp;
  private MemoryBudget.Reservation reserved;
  private OffHeapBuffer memory;
  private MemoryRegion mr;
  private ByteBuffer view;
  private RecvRequests recvWr;
  private SendRequests sendWr;
  private boolean closed;

  private UdResources(RdmaRuntime runtime, DeviceContext context, int port, int receives,
      int sends) {
    this.runtime = runtime;
    this.context = context;
    this.mtu = context.queryPort(port).activeMtu().bytes;
    this.receiveSize = mtu + DatagramFormat.GRH_BYTES;
    this.receives = receives;
    this.sends = sends;
  }

  /**
   * Opens everything; on a failure frees what was opened and rethrows. {@code makeQp} makes the
   * QP from the attributes (by verbs, or by a CM id), {@code destroyQp} destroys it; with
   * {@code shared} the QP takes its receives from a shared receive queue others may join.
   */
  static UdResources open(RdmaRuntime runtime, DeviceContext context, int port, int receives,
      int sends, boolean shared, BiFunction<ProtectionDomain, QpInitAttributes, QueuePair> makeQp,
      Function<QueuePair, Runnable> destroyQp, String purpose, CompletionHandler handler) {
    UdResources r = new UdResources(runtime, context, port, receives, sends);
    try {
      r.openAll(shared, makeQp, destroyQp, purpose, handler);
      return r;
    } catch (RuntimeException e) {
      r.close(() -> {});
      throw e;
    }
  }

  private void openAll(boolean shared,
      BiFunction<ProtectionDomain, QpInitAttributes, QueuePair> makeQp,
      Function<QueuePair, Runnable> destroyer, String purpose, CompletionHandler handler) {
    long bytes = (long) receives * receiveSize + (long) sends * mtu;
    reserved = runtime.memory().reserve(bytes, purpose, DatagramSettings.PATH
        + ".receive-buffers or .send-buffers");
    hub = runtime.hubs().acquire(context);
    pd = context.allocPd();
    memory = OffHeapBuffer.allocate(bytes);
    mr = pd.registerMemory(memory, Access.LOCAL_WRITE);
    view = memory.view(0, (int) bytes);
    recvWr = new RecvRequests(receives, 1);
    sendWr = new SendRequests(sends, 1);
    cq = hub.createPolledCq(receives + sends, handler);
    if (shared) srq = pd.createSrq(new SrqAttributes(receives, 1, 0));
    qp = makeQp.apply(pd, attributes(sends));
    destroyQp = destroyer.apply(qp);
  }

  /** Attributes of a QP on these resources: another QP of an endpoint sends little. */
  QpInitAttributes attributes(int sendDepth) {
    QpInitAttributes a = QpInitAttributes.of(QpType.UD, cq, cq).maxSendWr(sendDepth);
    return srq != null ? a.srq(srq) : a.maxRecvWr(receives);
  }

  long receiveAddress(int slot) {
    return memory.address() + (long) slot * receiveSize;
  }

  /** Queues a receive into {@code slot}; {@link #flushReceives} posts the queued ones. */
  void addReceive(int slot) {
    recvWr.add(slot).sge(mr, (long) slot * receiveSize, receiveSize);
  }

  void flushReceives() {
    if (recvWr.size() == 0) return;
    try {
      if (srq != null) srq.postRecv(recvWr); else qp.postRecv(recvWr);
    } finally {
      recvWr.clear();
    }
  }

  /** {@code length} bytes of slot {@code slot} as a ByteString (a copy). */
  ByteString copyOut(int slot, int offset, int length) {
    int at = slot * receiveSize + offset;
    view.clear().position(at).limit(at + length);
    return ByteString.fromByteBuffer(view);
  }

  /** Copies {@code data} into send slot {@code slot} and queues its send. */
  void addSend(int slot, ByteString data, AddressHandle ah, int qpn, int qkey) {
    long offset = (long) receives * receiveSize + (long) slot * mtu;
    view.clear().position((int) offset).limit((int) offset + data.size());
    data.copyToBuffer(view);
    sendWr.add(SEND_TAG + slot, WrOpcode.SEND, SendRequests.SIGNALED)
        .sge(mr, offset, data.size()).ud(ah, qpn, qkey);
  }

  void flushSends() {
    if (sendWr.size() == 0) return;
    try {
      qp.postSend(sendWr);
    } finally {
      sendWr.clear();
    }
  }

  /**
   * Frees everything, once, in order: the QP first (the caller's other QPs on these resources
   * must be gone already), then {@code afterQps} (the caller's address handles), then the rest.
   */
  void close(Runnable afterQps) {
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
      org.slf4j.LoggerFactory.getLogger(UdResources.class).warn("freeing a datagram resource"
          + " failed: {}", e.getMessage());
    }
  }
}
