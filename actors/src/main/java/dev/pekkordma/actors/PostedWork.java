package dev.pekkordma.actors;

import dev.pekkordma.actors.QpActor.Completed;
import dev.pekkordma.actors.QpActor.Completion;
import dev.pekkordma.actors.QpActor.PostRejected;
import dev.pekkordma.actors.QpActor.Read;
import dev.pekkordma.actors.QpActor.Receive;
import dev.pekkordma.actors.QpActor.Send;
import dev.pekkordma.actors.QpActor.Work;
import dev.pekkordma.actors.QpActor.WorkResult;
import dev.pekkordma.actors.QpActor.Write;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;

/**
 * A QP actor's work in flight: each request posted, who asked for it, how many of each queue's
 * slots are taken, and the reusable batches requests are posted from. A request's buffer stays
 * here until its completion, or until the QP can no longer touch it.
 */
final class PostedWork {
  private final QueuePair qp;
  private final int qpNum;
  private final Logger log;
  private final SendRequests sendBatch;
  private final RecvRequests recvBatch;
  private final Map<Long, AwaitedWork> outstanding = new HashMap<>();
  private long nextWrId = 1;
  private int sendsOutstanding;
  private int recvsOutstanding;

  private static final class AwaitedWork {
    final long id;
    final ActorRef<WorkResult> requester;
    final Work work;
    boolean counted = true;
    boolean reported;

    AwaitedWork(long id, ActorRef<WorkResult> requester, Work work) {
      this.id = id;
      this.requester = requester;
      this.work = work;
    }

    boolean isSend() {
      return !(work instanceof Receive);
    }
  }

  PostedWork(QueuePair qp, Logger log) {
    this.qp = qp;
    this.qpNum = qp.qpNum();
    this.log = log;
    this.sendBatch = new SendRequests(qp.capabilities().maxSendWr(), 1);
    this.recvBatch = new RecvRequests(Math.max(1, qp.capabilities().maxRecvWr()), 1);
  }

  /** Null when every request is well formed, else why not. */
  static String validate(List<Work> work) {
    if (work.isEmpty()) return "no work requests";
    for (Work w : work) {
      if (w == null) return "a work request is null";
      Buffer b = w.buffer();
      if (b == null) return "work request " + w.id() + " has no buffer";
      if (b.pool().isClosed()) return "work request " + w.id() + ": its buffer's pool is closed";
      if (!b.pool().isLeased(b)) return "work request " + w.id() + ": " + b + " is not leased";
      int len = w instanceof Send s ? s.length() : w instanceof Write x ? x.length()
          : w instanceof Read r ? r.length() : b.capacity();
      if (len < 0 || len > b.capacity()) {
        return "work request " + w.id() + ": length " + len + " outside [0, " + b.capacity()
            + "]";
      }
    }
    return null;
  }

  /** Null when the queues have room for {@code sends} and {@code recvs} more, else why not. */
  String noRoomFor(int sends, int recvs) {
    int maxSend = qp.capabilities().maxSendWr();
    int maxRecv = qp.capabilities().maxRecvWr();
    if (sendsOutstanding + sends > maxSend) {
      return "the send queue is full: " + sendsOutstanding + " outstanding + " + sends
          + " new > " + maxSend;
    }
    if (recvsOutstanding + recvs > maxRecv) {
      return "the receive queue is full: " + recvsOutstanding + " outstanding + " + recvs
          + " new > " + maxRecv;
    }
    return null;
  }

  /** Posts the receives of {@code work} in one call; false (the requester told) if refused. */
  boolean postRecvs(List<Work> work, ActorRef<WorkResult> requester) {
    recvBatch.clear();
    List<AwaitedWork> posted = new ArrayList<>();
    for (Work w : work) {
      if (!(w instanceof Receive)) continue;
      AwaitedWork p = track(w, requester);
      recvBatch.add(p.id).sge(w.buffer().address(), w.buffer().capacity(), w.buffer().lkey());
      posted.add(p);
    }
    recvsOutstanding += posted.size();
    try {
      qp.postRecv(recvBatch);
      return true;
    } catch (RuntimeException e) {
      failed(posted, requester, e);
      return false;
    }
  }

  /** Posts the sends, writes and reads of {@code work} in one call; false if refused. */
  boolean postSends(List<Work> work, ActorRef<WorkResult> requester) {
    sendBatch.clear();
    List<AwaitedWork> posted = new ArrayList<>();
    for (Work w : work) {
      if (w instanceof Receive) continue;
      AwaitedWork p = track(w, requester);
      Buffer b = w.buffer();
      if (w instanceof Send s) {
        sendBatch.add(p.id, s.immediate() == null ? WrOpcode.SEND : WrOpcode.SEND_WITH_IMM,
            SendRequests.SIGNALED).sge(b.address(), s.length(), b.lkey());
        if (s.immediate() != null) sendBatch.immediate(s.immediate());
      } else if (w instanceof Write x) {
        sendBatch.add(p.id, x.immediate() == null ? WrOpcode.RDMA_WRITE
            : WrOpcode.RDMA_WRITE_WITH_IMM, SendRequests.SIGNALED)
            .sge(b.address(), x.length(), b.lkey()).rdma(x.remoteAddress(), x.rkey());
        if (x.immediate() != null) sendBatch.immediate(x.immediate());
      } else if (w instanceof Read r) {
        sendBatch.add(p.id, WrOpcode.RDMA_READ, SendRequests.SIGNALED)
            .sge(b.address(), r.length(), b.lkey()).rdma(r.remoteAddress(), r.rkey());
      }
      posted.add(p);
    }
    sendsOutstanding += posted.size();
    try {
      qp.postSend(sendBatch);
      return true;
    } catch (RuntimeException e) {
      failed(posted, requester, e);
      return false;
    }
  }

  private AwaitedWork track(Work w, ActorRef<WorkResult> requester) {
    AwaitedWork p = new AwaitedWork(nextWrId++, requester, w);
    outstanding.put(p.id, p);
    return p;
  }

  /**
   * Verbs refused the batch. Requests before the bad one may be posted, and which they are is
   * not known, so the buffers stay here until a completion or the QP's end; none of them
   * counts against the queue any more.
   */
  private void failed(
      List<AwaitedWork> posted, ActorRef<WorkResult> requester, RuntimeException e) {
    List<Long> ids = new ArrayList<>();
    for (AwaitedWork p : posted) {
      p.reported = true;
      p.counted = false;
      if (p.isSend()) sendsOutstanding--; else recvsOutstanding--;
      ids.add(p.work.id());
    }
    requester.tell(new PostRejected(qpNum, qp.state(), ids, e.getMessage()));
  }

  /**
   * Hands a poll's completions to their requesters, one message each; returns the first error
   * status among them, or null.
   */
  WcStatus completed(CompletionBatch b) {
    Map<ActorRef<WorkResult>, List<Completion>> out = new LinkedHashMap<>();
    WcStatus firstError = null;
    for (int i = 0; i < b.size; i++) {
      AwaitedWork p = outstanding.remove(b.wrIds[i]);
      if (p == null) continue; // from before a reset, or reported when the QP went away
      if (p.counted) {
        if (p.isSend()) sendsOutstanding--; else recvsOutstanding--;
      }
      WcStatus status = WcStatus.of(b.status[i]);
      if (status != WcStatus.SUCCESS && firstError == null) firstError = status;
      if (p.reported) {
        release(p);
        continue;
      }
      boolean handBack = status == WcStatus.SUCCESS
          && (p.work instanceof Receive || p.work instanceof Read);
      if (!handBack) release(p);
      WcOpcode opcode = b.opcodes[i] >= 0 && status == WcStatus.SUCCESS
          ? WcOpcode.of(b.opcodes[i]) : null;
      out.computeIfAbsent(p.requester, r -> new ArrayList<>())
          .add(new Completion(p.work.id(), status, opcode, b.byteLengths[i],
              b.withImmediate[i] ? b.immediates[i] : null, handBack ? p.work.buffer() : null));
    }
    out.forEach((r, list) -> r.tell(new Completed(qpNum, list)));
    return firstError;
  }

  /** Whether every request's requester has heard of its end. */
  boolean allReported() {
    for (AwaitedWork p : outstanding.values()) {
      if (!p.reported) return false;
    }
    return true;
  }

  /** Every outstanding request is reported flushed: no completion will come for it. */
  void reportFlushed() {
    Map<ActorRef<WorkResult>, List<Completion>> out = new LinkedHashMap<>();
    for (AwaitedWork p : outstanding.values()) {
      if (p.reported) continue;
      p.reported = true;
      out.computeIfAbsent(p.requester, r -> new ArrayList<>())
          .add(new Completion(p.work.id(), WcStatus.WR_FLUSH_ERR, opcodeOf(p.work), 0, null,
              null));
    }
    out.forEach((r, list) -> r.tell(new Completed(qpNum, list)));
  }

  /** The QP can touch no buffer any more (RESET, a failed CQ, destroyed): all go back. */
  void releaseAll() {
    for (AwaitedWork p : outstanding.values()) release(p);
    outstanding.clear();
    sendsOutstanding = 0;
    recvsOutstanding = 0;
  }

  /** After the QP is destroyed. */
  void close() {
    reportFlushed();
    releaseAll();
    sendBatch.close();
    recvBatch.close();
  }

  private void release(AwaitedWork p) {
    try {
      p.work.buffer().release();
    } catch (RuntimeException e) {
      log.warn("QP {}: returning {} failed: {}", qpNum, p.work.buffer(), e.getMessage());
    }
  }

  static WcOpcode opcodeOf(Work w) {
    if (w instanceof Receive) return WcOpcode.RECV;
    if (w instanceof Write) return WcOpcode.RDMA_WRITE;
    if (w instanceof Read) return WcOpcode.RDMA_READ;
    return WcOpcode.SEND;
  }
}
