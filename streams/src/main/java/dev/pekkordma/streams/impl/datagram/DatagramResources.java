package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.CompletionHub;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.streams.impl.StreamsRuntime;
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
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.util.function.BiFunction;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a datagram stage registers and creates on the device its CM id is on, once: the hub's
 * woken CQ, a PD, one registered area (receive slots of MTU + GRH, then send slots of MTU), a
 * shared receive queue when several QPs take receives, and the QP. The work request batches and
 * the completion array are made here once and reused. {@link #close} frees in order.
 */
final class DatagramResources {
  private static final Logger log = LoggerFactory.getLogger(DatagramResources.class);
  static final long SEND_TAG = 1L << 40;
  static final int POLL_BATCH = 32;

  final DeviceContext context;
  final int port;
  final int mtu;
  final int receiveSize;
  final int receives;
  final int sends;
  private final StreamsRuntime rt;
  private CompletionHub hub;
  ProtectionDomain pd;
  CompletionQueue cq;
  SharedReceiveQueue srq;
  QueuePair qp;
  private Runnable destroyQp;
  private MemoryBudget.Reservation reserved;
  private OffHeapBuffer memory;
  private MemoryRegion mr;
  /** The receive area, for reading; the send area, for writing; reused, never handed out. */
  private ByteBuffer receiveView;
  private ByteBuffer sendView;
  private RecvRequests recvWr;
  private SendRequests sendWr;
  WorkCompletions wcs;
  private boolean closed;

  private DatagramResources(StreamsRuntime rt, DeviceContext context, int port, int receives,
      int sends) {
    this.rt = rt;
    this.context = context;
    this.port = port;
    this.mtu = context.queryPort(port).activeMtu().bytes;
    this.receiveSize = mtu + DatagramFormat.GRH_BYTES;
    this.receives = receives;
    this.sends = sends;
  }

  /**
   * Opens everything, or frees what it opened and rethrows. {@code makeQp} makes the QP (by
   * verbs, or by a CM id), {@code destroyQp} destroys it; {@code wake} runs when the CQ fires.
   */
  static DatagramResources open(StreamsRuntime rt, DeviceContext context, int port,
      int receives, int sends, boolean shared,
      BiFunction<ProtectionDomain, QpInitAttributes, QueuePair> makeQp,
      java.util.function.Function<QueuePair, Runnable> destroyQp, String purpose, Runnable wake) {
    DatagramResources r = new DatagramResources(rt, context, port, receives, sends);
    try {
      long bytes = (long) receives * r.receiveSize + (long) sends * r.mtu;
      r.reserved = rt.runtime.memory().reserve(bytes, purpose, DatagramSettings.PATH
          + ".receive-buffers or .send-buffers");
      r.hub = rt.hubs.acquire(context);
      r.pd = context.allocPd();
      r.memory = OffHeapBuffer.allocate(bytes);
      r.mr = r.pd.registerMemory(r.memory, Access.LOCAL_WRITE);
      long receiveBytes = (long) receives * r.receiveSize;
      r.receiveView = r.memory.view(0, (int) receiveBytes);
      r.sendView = r.memory.view((int) receiveBytes, (int) (bytes - receiveBytes));
      r.recvWr = new RecvRequests(receives, 1);
      r.sendWr = new SendRequests(sends, 1);
      r.wcs = new WorkCompletions(POLL_BATCH);
      r.cq = r.hub.createCq(receives + sends, wake);
      if (shared) r.srq = r.pd.createSrq(new SrqAttributes(receives, 1, 0));
      r.qp = makeQp.apply(r.pd, r.attributes(sends));
      r.destroyQp = destroyQp.apply(r.qp);
      r.cq.requestNotify(false);
      return r;
    } catch (RuntimeException e) {
      r.close(() -> {});
      throw e;
    }
  }

  /** A QP's attributes on these resources; an endpoint's other QPs send nothing. */
  QpInitAttributes attributes(int sendDepth) {
    QpInitAttributes a = QpInitAttributes.of(QpType.UD, cq, cq).maxSendWr(sendDepth);
    return srq != null ? a.srq(srq) : a.maxRecvWr(receives);
  }

  /** The receive area, positioned nowhere in particular: for {@link DatagramFormat}. */
  ByteBuffer receiveArea() {
    return receiveView;
  }

  void addReceive(int slot) {
    recvWr.add(slot).sge(mr, (long) slot * receiveSize, receiveSize);
  }

  int receivesQueued() {
    return recvWr.size();
  }

  void flushReceives() {
    if (recvWr.size() == 0) return;
    try {
      if (srq != null) srq.postRecv(recvWr); else qp.postRecv(recvWr);
    } finally {
      recvWr.clear();
    }
  }

  /** {@code length} bytes at {@code offset} of receive slot {@code slot}, copied. */
  ByteString copyOut(int slot, int offset, int length) {
    int at = slot * receiveSize + offset;
    receiveView.limit(at + length).position(at);
    ByteString b = ByteString.fromByteBuffer(receiveView);
    receiveView.clear();
    return b;
  }

  /** Copies {@code data} into send slot {@code slot} and queues its send. */
  void addSend(int slot, ByteString data, AddressHandle ah, int qpn, int qkey) {
    int at = slot * mtu;
    sendView.limit(at + data.size()).position(at);
    data.copyToBuffer(sendView);
    sendView.clear();
    sendWr.add(SEND_TAG + slot, WrOpcode.SEND, SendRequests.SIGNALED)
        .sge(mr, (long) receives * receiveSize + at, data.size()).ud(ah, qpn, qkey);
  }

  int sendsQueued() {
    return sendWr.size();
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
   * Frees everything once, in order: the QP (the caller's other QPs on these resources are gone
   * already), {@code afterQps} (the caller's address handles), SRQ, CQ, MR, PD, memory, hub.
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
    if (hub != null) rt.hubs.release(hub);
    if (recvWr != null) recvWr.close();
    if (sendWr != null) sendWr.close();
    if (wcs != null) wcs.close();
  }

  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("freeing a datagram stage's resource failed: {}", e.getMessage());
    }
  }
}
