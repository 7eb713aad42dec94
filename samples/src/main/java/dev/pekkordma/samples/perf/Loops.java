package dev.pekkordma.samples.perf;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.lang.invoke.VarHandle;

/**
 * What the measuring side ({@link Initiator}) and the answering side ({@link PerfResponder}) share
 * in latency tests (bandwidth tests run {@link BwLoop}): signaled-send accounting with CQ
 * moderation, receive re-arming in batches, and the sequence byte that ends each write-latency
 * message. Every request goes through the side's reusable
 * batches; nothing here allocates on the way (failures excepted).
 */
abstract class Loops {
  final PerfSide side;
  final PerfSpec spec;
  final IdleWatch idle;
  final QueuePair qp;
  final CompletionQueue cq;
  final WorkCompletions wcs;
  final SendRequests sends;
  final RecvRequests recvs;
  final int cqMod;
  private final int rearmBatch;
  /** Sends posted and known complete (a signaled completion completes all before it). */
  long sendsPosted;
  long sendsDone;
  /** Receives consumed and not posted again yet. */
  int consumed;
  /** Messages received, and those of them the loops have taken. */
  long received;
  long taken;
  /** Write-latency messages exchanged so far, both ways counted once. */
  private long exchanges;

  Loops(PerfSide side, IdleWatch idle) {
    this.side = side;
    this.spec = side.spec;
    this.idle = idle;
    this.qp = side.qp;
    this.cq = side.cq;
    this.wcs = side.wcs;
    this.sends = side.sends;
    this.recvs = side.recvs;
    this.cqMod = spec.cqModeration();
    this.rearmBatch = Math.max(1, Math.min(16, side.recvQueue / 2));
  }

  /** Flags of request {@code i} of {@code n} in a run: signaled per CQ moderation, inline. */
  final int flags(long i, int n, int size) {
    int f = BwResult.signaled(i, cqMod, n) ? SendRequests.SIGNALED : 0;
    return spec.inline(size) ? f | SendRequests.INLINE : f;
  }

  /** Posts one send-queue request; signaled ones carry their number as wr_id. */
  final void postOne(WrOpcode op, int flags, long local, int size, long remote, int rkey) {
    sends.clear();
    sends.add(sendsPosted, op, flags).sge(local, size, side.lkey);
    if (op != WrOpcode.SEND) {
      sends.rdma(remote, rkey);
    } else {
      side.address(0);
    }
    qp.postSend(sends);
    sendsPosted++;
  }

  /** Waits until the send queue has room for one more. */
  final void awaitSendRoom() {
    while (sendsPosted - sendsDone >= side.sendQueue - 1) {
      if (pollOnce() == 0) idle.idle("send completions");
    }
  }

  /** Waits until every send posted has completed (end of a run). */
  final void drainSends() {
    while (sendsDone < sendsPosted) {
      if (pollOnce() == 0) idle.idle("the last send completions");
    }
  }

  private PerfFailure flushed; // seen after the completions before it were counted

  /**
   * Polls once: send completions advance {@link #sendsDone}, receives advance {@link #received}
   * (and are re-armed in batches). Returns how many completions came.
   */
  final int pollOnce() {
    if (flushed != null) throw flushed;
    int m = cq.poll(wcs);
    if (m == 0) return 0;
    idle.progress();
    int got = 0;
    for (int i = 0; i < m; i++) {
      if (!wcs.ok(i)) {
        if (wcs.status(i) != WcStatus.WR_FLUSH_ERR) throw failed(i);
        // the peer's disconnect after the last message flushes what is still posted, maybe in
        // the same poll as that message: a failure only if the caller wants more
        flushed = failed(i);
        break;
      }
      if (wcs.opcode(i) == WcOpcode.RECV) {
        got++;
      } else {
        sendsDone = wcs.wrId(i) + 1;
      }
    }
    if (got > 0) {
      received += got;
      consumed += got;
      if (consumed >= rearmBatch) rearm();
    }
    return m;
  }

  /** Waits for the next message (one may have come while waiting for something else). */
  final void awaitMessage(String what) {
    while (received == taken) {
      if (pollOnce() == 0) idle.idle(what);
    }
    taken++;
    if (received != taken) {
      throw new PerfFailure("protocol error: " + (received - taken + 1)
          + " messages where one was expected");
    }
  }

  /** Posts the consumed receives again. */
  final void rearm() {
    while (consumed > 0) {
      recvs.clear();
      int n = Math.min(consumed, recvs.capacity());
      for (int i = 0; i < n; i++) recvs.add(0).sge(side.target, side.receiveLength, side.lkey);
      qp.postRecv(recvs);
      consumed -= n;
    }
  }

  /** The byte that ends the next write-latency message: never 0, never the previous one. */
  final byte nextSequence() {
    return (byte) (exchanges++ % 255 + 1);
  }

  /** Waits until the last byte of a {@code size}-byte message in the target region is {@code seq}. */
  final void awaitByte(int size, byte seq) {
    long at = side.target + size - 1;
    while (true) {
      VarHandle.acquireFence(); // read memory again each time: the peer's NIC writes it
      if (NativeMemory.getByte(at) == seq) break;
      idle.idle("the peer's RDMA write");
    }
    idle.progress();
  }

  /** Stamps the sequence byte into the last byte of the outgoing message. */
  final void stamp(int size, byte seq) {
    NativeMemory.putByte(side.source + size - 1, seq);
    VarHandle.releaseFence();
  }

  final PerfFailure failed(int i) {
    return new PerfFailure("work completion failed: " + wcs.describe(i) + " ("
        + wcs.status(i).description + ")");
  }
}
