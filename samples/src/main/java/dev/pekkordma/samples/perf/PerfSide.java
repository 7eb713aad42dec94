package dev.pekkordma.samples.perf;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.samples.Resources;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * What one side of a test holds: a PD, one registered buffer, one CQ for every queue, the
 * reusable request and completion batches, and the QPs once made ({@code --qp} of them in
 * bandwidth tests, sharing the buffer and the CQ as perftest's share theirs). The buffer is one
 * message long for bandwidth tests (every request uses it, as perftest's do) and two for latency
 * tests: where the peer's messages land ({@link #target}), then what this side sends ({@link
 * #source}). A UD receive needs 40 bytes more for the GRH before the message. After the data
 * comes a small control area the peer's {@link PeerLink} writes into. Everything is allocated
 * here, before the first request, so the loops allocate nothing.
 */
final class PerfSide implements AutoCloseable {
  /** Completions taken per poll. */
  static final int POLL_BATCH = 64;
  /** What a UD receive holds before the message. */
  static final int GRH = 40;
  /** perftest's qkey. */
  static final int QKEY = 0x11111111;

  final PerfSpec spec;
  final DeviceContext ctx;
  final int port;
  final QpType type;
  final ProtectionDomain pd;
  final OffHeapBuffer buffer;
  final MemoryRegion mr;
  final CompletionQueue cq;
  final WorkCompletions wcs;
  final SendRequests sends;
  final RecvRequests recvs;
  /** Send queue and receive queue sizes, per QP. */
  final int sendQueue;
  final int recvQueue;
  /** Where the peer's messages land (a UD receive: the GRH first), and what this side sends. */
  final long target;
  final long source;
  /** What a receive takes: the largest message, and the GRH on UD. */
  final int receiveLength;
  final int lkey;
  /** This side's QPs, and the first for the latency loops. */
  final QueuePair[] qps;
  QueuePair qp;
  /** UD: where datagrams go, and the peer's QP numbers. */
  AddressHandle ah;
  final int[] remoteQpns;
  /** The peer's buffer. */
  RemoteBuffer remote;
  private final Resources resources = new Resources();

  PerfSide(DeviceContext ctx, int port, PerfSpec spec) {
    this.spec = spec;
    this.ctx = ctx;
    this.port = port;
    this.type = spec.connection();
    int q = spec.qps();
    qps = new QueuePair[q];
    remoteQpns = new int[q];
    try {
      DeviceAttributes dev = ctx.queryDevice();
      PerfTest t = spec.test();
      sendQueue = t.bandwidth() ? spec.txDepth() : spec.cqModeration() + 2;
      recvQueue = t.verb() == PerfTest.Verb.SEND ? spec.rxDepth() : 1;
      if (sendQueue > dev.maxQpWr()) {
        throw new PerfFailure((t.bandwidth() ? "--tx-depth " + spec.txDepth()
            : "--cq-mod " + spec.cqModeration()) + " needs " + sendQueue
            + " send queue entries; the device allows " + dev.maxQpWr());
      }
      if (recvQueue > dev.maxQpWr()) {
        throw new PerfFailure("--rx-depth " + recvQueue + " is more than the device allows ("
            + dev.maxQpWr() + ")");
      }
      if (spec.inlineSize() > dev.maxInlineData()) {
        throw new PerfFailure("--inline-size " + spec.inlineSize() + " is more than the device"
            + " allows (" + dev.maxInlineData() + ")");
      }
      if (q > dev.maxQp()) {
        throw new PerfFailure("--qp " + q + " is more QPs than the device allows (" + dev.maxQp()
            + ")");
      }
      // room for every queue's completions and the link's writes, as the device allows
      long cqe = Math.min((long) q * (sendQueue + recvQueue) + 16, dev.maxCqe());
      receiveLength = spec.maxSize() + (type == QpType.UD ? GRH : 0);
      pd = resources.add(ctx.allocPd());
      buffer = resources.add(OffHeapBuffer.allocate(bufferLength(spec)));
      mr = resources.add(pd.registerMemory(buffer,
          Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ));
      cq = resources.add(ctx.createCq((int) cqe, null));
      wcs = resources.add(new WorkCompletions(POLL_BATCH));
      sends = resources.add(new SendRequests(Math.max(sendQueue, 1), 1));
      recvs = resources.add(new RecvRequests(Math.max(recvQueue, POLL_BATCH), 1));
      target = mr.address();
      source = t.bandwidth() ? target : target + receiveLength;
      lkey = mr.lkey();
    } catch (RuntimeException e) {
      closeAfter(e);
      throw e;
    }
  }

  /** Where the control area starts in a side's buffer: after the data, cache-line aligned. */
  static long controlOffset(PerfSpec spec) {
    long data = spec.maxSize() + (spec.connection() == QpType.UD ? GRH : 0);
    if (!spec.test().bandwidth()) data += spec.maxSize();
    return (data + 63) & ~63L;
  }

  static long bufferLength(PerfSpec spec) {
    return controlOffset(spec) + PeerLink.WireLink.AREA;
  }

  QpInitAttributes qpAttributes() {
    return QpInitAttributes.of(type, cq, cq).maxSendWr(sendQueue).maxRecvWr(recvQueue)
        .maxSendSge(1).maxRecvSge(1).maxInlineData(spec.inlineSize());
  }

  /** Takes QP {@code k} made for this side; {@code destroy} is how it goes at the end. */
  void adopt(int k, QueuePair made, AutoCloseable destroy) {
    qps[k] = made;
    if (k == 0) qp = made;
    resources.onClose(() -> {
      qps[k] = null;
      if (k == 0) qp = null;
      destroy.close();
    });
  }

  /** UD: the address handle to the peer, closed with this side. */
  void adoptAddressHandle(AddressHandle handle) {
    ah = resources.add(handle);
  }

  /** Posts receives for every slot of every receive queue (send tests). */
  void postAllReceives() {
    for (int k = 0; k < qps.length; k++) postReceives(k);
  }

  /** Fills QP {@code k}'s receive queue (send tests); a receive's wr_id is its QP's index. */
  void postReceives(int k) {
    if (spec.test().verb() != PerfTest.Verb.SEND) return;
    int left = recvQueue;
    while (left > 0) {
      recvs.clear();
      int n = Math.min(left, recvs.capacity());
      for (int i = 0; i < n; i++) recvs.add(k).sge(target, receiveLength, lkey);
      qps[k].postRecv(recvs);
      left -= n;
    }
  }

  /** Adds where a send on QP {@code k} goes, on UD (connected QPs know). */
  void address(int k) {
    if (ah != null) sends.ud(ah, remoteQpns[k], QKEY);
  }

  RemoteBuffer local() {
    return new RemoteBuffer(mr.address(), mr.rkey(), buffer.length());
  }

  private void closeAfter(RuntimeException e) {
    try {
      resources.close();
    } catch (RuntimeException suppressed) {
      e.addSuppressed(suppressed);
    }
  }

  @Override
  public void close() {
    resources.close();
  }

  /** Where a side's buffer is: the accept's private data, or handed over in one JVM. */
  record RemoteBuffer(long address, int rkey, long length) {
    static final int LENGTH = 24;

    byte[] encode() {
      return ByteBuffer.allocate(LENGTH).order(ByteOrder.BIG_ENDIAN).putShort((short) PerfSpec.MAGIC)
          .put(PerfSpec.VERSION).put((byte) 0).putLong(address).putInt(rkey).putLong(length)
          .array();
    }

    static RemoteBuffer decode(byte[] data) {
      if (data == null || data.length < LENGTH) {
        throw new PerfFailure("the server's accept has " + (data == null ? 0 : data.length)
            + " bytes of private data, not an rdma-perf answer (is the peer an rdma-perf server?)");
      }
      ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
      int magic = b.getShort() & 0xffff;
      byte version = b.get();
      b.get();
      if (magic != PerfSpec.MAGIC || version != PerfSpec.VERSION) {
        throw new PerfFailure("not an rdma-perf server's answer (magic 0x"
            + Integer.toHexString(magic) + ", version " + version + ")");
      }
      return new RemoteBuffer(b.getLong(), b.getInt(), b.getLong());
    }
  }
}
