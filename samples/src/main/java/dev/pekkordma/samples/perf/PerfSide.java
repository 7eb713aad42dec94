package dev.pekkordma.samples.perf;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.samples.Resources;
import dev.pekkordma.verbs.Access;
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
 * What one side of a test holds: a PD, one registered buffer, one CQ for both queues, the
 * reusable request and completion batches, and the QP once made. The buffer is one message
 * long for bandwidth tests (every request uses it, as perftest's do) and two for latency tests:
 * where the peer's messages land ({@link #target}), then what this side sends ({@link #source}).
 * Everything is allocated here, before the first request, so the loops allocate nothing.
 */
final class PerfSide implements AutoCloseable {
  /** Completions taken per poll. */
  static final int POLL_BATCH = 64;

  final PerfSpec spec;
  final DeviceContext ctx;
  final int port;
  final ProtectionDomain pd;
  final OffHeapBuffer buffer;
  final MemoryRegion mr;
  final CompletionQueue cq;
  final WorkCompletions wcs;
  final SendRequests sends;
  final RecvRequests recvs;
  /** Send queue and receive queue sizes. */
  final int sendQueue;
  final int recvQueue;
  /** Where the peer's messages land, and what this side sends. */
  final long target;
  final long source;
  final int lkey;
  QueuePair qp;
  /** The peer's buffer. */
  RemoteBuffer remote;
  private final Resources resources = new Resources();

  PerfSide(DeviceContext ctx, int port, PerfSpec spec) {
    this.spec = spec;
    this.ctx = ctx;
    this.port = port;
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
      int cqe = Math.min(sendQueue + recvQueue + 16, dev.maxCqe());
      long max = spec.maxSize();
      long length = t.bandwidth() ? max : 2 * max;
      pd = resources.add(ctx.allocPd());
      buffer = resources.add(OffHeapBuffer.allocate(length));
      mr = resources.add(pd.registerMemory(buffer,
          Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ));
      cq = resources.add(ctx.createCq(cqe, null));
      wcs = resources.add(new WorkCompletions(POLL_BATCH));
      sends = resources.add(new SendRequests(Math.max(sendQueue, 1), 1));
      recvs = resources.add(new RecvRequests(Math.max(recvQueue, POLL_BATCH), 1));
      target = mr.address();
      source = t.bandwidth() ? target : target + max;
      lkey = mr.lkey();
    } catch (RuntimeException e) {
      closeAfter(e);
      throw e;
    }
  }

  QpInitAttributes qpAttributes() {
    return QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(sendQueue).maxRecvWr(recvQueue)
        .maxSendSge(1).maxRecvSge(1).maxInlineData(spec.inlineSize());
  }

  /** Takes the QP made for this side; {@code destroy} is how it goes at the end. */
  void adopt(QueuePair qp, AutoCloseable destroy) {
    this.qp = qp;
    resources.onClose(() -> {
      this.qp = null;
      destroy.close();
    });
  }

  /** Posts receives for every slot of the receive queue (send tests). */
  void postAllReceives() {
    if (spec.test().verb() != PerfTest.Verb.SEND) return;
    int max = spec.maxSize();
    int left = recvQueue;
    while (left > 0) {
      recvs.clear();
      int n = Math.min(left, recvs.capacity());
      for (int i = 0; i < n; i++) recvs.add(0).sge(target, max, lkey);
      qp.postRecv(recvs);
      left -= n;
    }
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
