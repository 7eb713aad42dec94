package dev.pekkordma.samples.perf;

import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;

/**
 * One side's part of a bandwidth run, as perftest's run_iter_bw: over every QP it keeps up to
 * {@code txDepth} requests in flight, posting as many as there is room for in one batch and
 * signaling one in every {@code cqModeration} of each QP; on the same CQ it takes the peer's
 * sends and posts their receives again in batches. A counted run makes {@code iterations}
 * requests on each QP; a timed one (perftest's -D) posts until the duration is up and counts
 * the requests completed between its margins. Between runs the sides tell each other, through
 * the {@link PeerLink}, how many messages they sent and what they measured.
 *
 * <p>A request's wr_id is its QP's index and its number on that QP; a receive's, its QP's
 * index. Everything is allocated before the first run; a run allocates only its result.
 */
final class BwLoop {
  private static final int SEQ_BITS = 40;
  private static final long SEQ_MASK = (1L << SEQ_BITS) - 1;
  /** How long a UC or UD receiver waits for stragglers after the sender's last message. */
  private static final long QUIET_NANOS = 50_000_000L;

  private final PerfSide side;
  private final PerfSpec spec;
  private final IdleWatch idle;
  private final PeerLink link;
  private final boolean sends;
  private final boolean receives;
  private final boolean reliable;
  private final int q;
  private final int tx;
  private final int cqMod;
  private final WrOpcode op;
  private final QueuePair[] qps;
  private final CompletionQueue cq;
  private final WorkCompletions wcs;
  private final SendRequests batch;
  private final RecvRequests recvs;
  private final int rearmBatch;
  /** Per QP in this run: requests posted, known complete, and up to the last signaled one. */
  private final long[] posted;
  private final long[] done;
  private final long[] signaledUpTo;
  /** Per QP: receives taken and not posted again yet. */
  private final int[] consumed;
  /** Every request's post time, and each completion event's count and time (counted runs). */
  private final long[] postTimes;
  private final long[] doneAt;
  private final long[] doneTimes;
  private int events;
  private long totalPosted;
  private long totalDone;
  /** Messages received over all runs, and those of them earlier runs accounted for. */
  private long received;
  private long receivedBase;
  private long lastReceiveAt;
  private int controlOutstanding;
  /** A timed run: requests completed while sampling, and when the sampling began and ended. */
  private boolean sampling;
  private long sampled;
  private long sampleStart;
  private long sampleEnd;
  private PerfFailure flushed;
  private long requests;
  private BwResult peer;

  /**
   * The client's loop: it makes the test's requests, and receives the server's sends in a
   * bidirectional SEND test. {@code link}: how to reach the peer between runs (null when no one
   * listens: a one-sided test's passive peer).
   */
  static BwLoop initiator(PerfSide side, IdleWatch idle, PeerLink link) {
    PerfSpec spec = side.spec;
    boolean sendTest = spec.test().verb() == PerfTest.Verb.SEND;
    return new BwLoop(side, idle, link, true, sendTest && spec.bidirectional());
  }

  /**
   * The server's loop: the client's sends land here in a SEND test, and it makes requests as
   * the client does in a bidirectional one.
   */
  static BwLoop responder(PerfSide side, IdleWatch idle, PeerLink link) {
    PerfSpec spec = side.spec;
    return new BwLoop(side, idle, link, spec.bidirectional(),
        spec.test().verb() == PerfTest.Verb.SEND);
  }

  /**
   * {@code sends}: this side makes the test's requests; {@code receives}: the peer's sends land
   * here. Made by {@link #initiator} and {@link #responder}, which say which.
   */
  private BwLoop(PerfSide side, IdleWatch idle, PeerLink link, boolean sends, boolean receives) {
    this.side = side;
    this.spec = side.spec;
    this.idle = idle;
    this.link = link;
    this.sends = sends;
    this.receives = receives;
    this.reliable = side.type == QpType.RC;
    this.q = spec.qps();
    this.tx = spec.txDepth();
    this.cqMod = spec.cqModeration();
    this.op = spec.test().verb().opcode;
    this.qps = side.qps;
    this.cq = side.cq;
    this.wcs = side.wcs;
    this.batch = side.sends;
    this.recvs = side.recvs;
    this.rearmBatch = Math.max(1, Math.min(16, side.recvQueue / 2));
    posted = new long[q];
    done = new long[q];
    signaledUpTo = new long[q];
    consumed = new int[q];
    int n = sends && !spec.timed() ? spec.iterations() : 0;
    postTimes = new long[n * q];
    doneAt = new long[((n + cqMod - 1) / cqMod) * q];
    doneTimes = new long[doneAt.length];
  }

  /** Requests this side made (or messages it took, if it only receives) in the last run. */
  long requests() {
    return requests;
  }

  /** The peer's figures for the last run of a bidirectional test, else null. */
  BwResult peer() {
    return peer;
  }

  /**
   * Runs {@code run} (the same number on both sides) of {@code size}-byte messages: {@code
   * perQp} requests on each QP, or for the spec's duration if it is timed. Returns this side's
   * figures when it sends and {@code measured}, else null.
   */
  BwResult run(int run, int size, int perQp, boolean measured) {
    awaitControl();
    for (int k = 0; k < q; k++) {
      posted[k] = 0;
      done[k] = 0;
      signaledUpTo[k] = 0;
    }
    events = 0;
    totalPosted = 0;
    totalDone = 0;
    BwResult mine = null;
    if (sends) {
      if (spec.timed()) {
        timed(size);
        mine = measured ? BwResult.timed(size, sampled, sampleEnd - sampleStart) : null;
      } else {
        counted(size, perQp, measured);
        mine = measured ? BwResult.of(size, (long) perQp * q, postTimes, doneAt, doneTimes,
            events) : null;
      }
    }
    long before = receivedBase;
    if (link != null) exchange(run, size, mine);
    requests = sends ? totalPosted : receivedBase - before;
    return mine;
  }

  private void counted(int size, int perQp, boolean record) {
    long all = (long) perQp * q;
    while (totalDone < all) {
      for (int k = 0; k < q; k++) {
        long room = tx - (posted[k] - done[k]);
        long left = perQp - posted[k];
        if (room > 0 && left > 0) {
          post(k, size, (int) Math.min(room, left), perQp, LastRequest.AS_MODERATED,
              record);
        }
      }
      if (poll(record) == 0) idle.idle("completions");
    }
  }

  /**
   * perftest's duration mode: posts for {@code duration} seconds and counts the completions
   * that come between the first and the last {@code margin} seconds. When time is up each QP's
   * last request is made a signaled one (it may need one more), so that all of them complete.
   */
  private void timed(int size) {
    long start = System.nanoTime();
    long from = start + spec.margin() * 1_000_000_000L;
    long to = start + (spec.duration() - spec.margin()) * 1_000_000_000L;
    long end = start + spec.duration() * 1_000_000_000L;
    sampling = false;
    sampled = 0;
    sampleStart = 0;
    sampleEnd = 0;
    boolean sampledAlready = false;
    while (true) {
      long now = System.nanoTime();
      if (!sampledAlready && now >= from) {
        sampling = true;
        sampledAlready = true;
        sampleStart = now;
      }
      if (sampling && now >= to) {
        sampling = false;
        sampleEnd = now;
      }
      if (now < end) {
        for (int k = 0; k < q; k++) {
          long room = tx - (posted[k] - done[k]);
          if (room > 0) post(k, size, (int) room, -1, LastRequest.AS_MODERATED, false);
        }
      } else {
        boolean open = false;
        for (int k = 0; k < q; k++) {
          if (signaledUpTo[k] == posted[k]) continue;
          open = true;
          if (posted[k] - done[k] < tx) post(k, size, 1, -1, LastRequest.SIGNALED, false);
        }
        if (!open && totalDone == totalPosted) break;
      }
      if (poll(false) == 0) idle.idle("completions");
    }
  }

  /** Whether a timed run's last request of a post is signaled whatever CQ moderation says. */
  private enum LastRequest { AS_MODERATED, SIGNALED }

  /**
   * Posts {@code count} requests on QP {@code k}, signaled per CQ moderation of {@code perQp}
   * (negative: a timed run's, with no last request) and the last one as {@code lastRequest}
   * says; with {@code record}, their post times.
   */
  private void post(int k, int size, int count, int perQp, LastRequest lastRequest,
      boolean record) {
    int inline = spec.inline(size) ? SendRequests.INLINE : 0;
    boolean rdma = op != WrOpcode.SEND;
    long remote = rdma ? side.remote.address() : 0;
    int rkey = rdma ? side.remote.rkey() : 0;
    long first = posted[k];
    long last = first + count;
    batch.clear();
    for (long j = first; j < last; j++) {
      boolean signaled = perQp >= 0 ? BwResult.signaled(j, cqMod, perQp)
          : (j + 1) % cqMod == 0 || lastRequest == LastRequest.SIGNALED && j == last - 1;
      batch.add(((long) k << SEQ_BITS) | j, op, signaled ? SendRequests.SIGNALED | inline : inline)
          .sge(side.source, size, side.lkey);
      if (rdma) {
        batch.rdma(remote, rkey);
      } else {
        side.address(k);
      }
      if (signaled) signaledUpTo[k] = j + 1;
    }
    if (record) {
      long t = System.nanoTime();
      for (long j = totalPosted; j < totalPosted + count; j++) postTimes[(int) j] = t;
    }
    posted[k] = last;
    totalPosted += count;
    qps[k].postSend(batch);
  }

  /** Polls once; returns how many completions came. */
  private int poll(boolean record) {
    if (flushed != null) throw flushed;
    int m = cq.poll(wcs);
    if (m == 0) return 0;
    long t = System.nanoTime();
    idle.progress();
    for (int i = 0; i < m; i++) {
      long id = wcs.wrId(i);
      if (!wcs.ok(i)) {
        if (wcs.status(i) != WcStatus.WR_FLUSH_ERR) throw failed(i);
        // the peer's disconnect after its last word flushes what is still posted: a failure
        // only if this side wants more (an error completion's opcode is undefined: the wr_id
        // tells the link's writes)
        if (id == PeerLink.CONTROL) controlOutstanding--;
        if (flushed == null) flushed = failed(i);
        continue;
      }
      if (wcs.opcode(i) == WcOpcode.RECV) {
        int k = (int) id;
        received++;
        lastReceiveAt = t;
        if (++consumed[k] >= rearmBatch) rearm(k);
      } else if (id == PeerLink.CONTROL) {
        controlOutstanding--;
      } else {
        int k = (int) (id >>> SEQ_BITS);
        long upTo = (id & SEQ_MASK) + 1;
        long delta = upTo - done[k];
        done[k] = upTo;
        totalDone += delta;
        if (sampling) sampled += delta;
        if (record) {
          doneAt[events] = totalDone;
          doneTimes[events++] = t;
        }
      }
    }
    return m;
  }

  private void rearm(int k) {
    while (consumed[k] > 0) {
      recvs.clear();
      int n = Math.min(consumed[k], recvs.capacity());
      for (int i = 0; i < n; i++) recvs.add(k).sge(side.target, side.receiveLength, side.lkey);
      qps[k].postRecv(recvs);
      consumed[k] -= n;
    }
  }

  /**
   * The end of a run, as perftest's sides shake hands between sizes: each tells the other how
   * many messages it sent, takes the peer's (UC and UD: until they stop coming), then tells
   * its figures and waits for the peer's.
   */
  private void exchange(int run, int size, BwResult mine) {
    tell(PeerLink.SENT, run, sends ? totalPosted : 0, 0, 0, 0);
    while (!link.heard(PeerLink.SENT, run)) {
      if (poll(false) == 0) idle.idle("the peer's end of the run");
    }
    if (receives) {
      long expected = receivedBase + link.value(PeerLink.SENT, 0);
      lastReceiveAt = System.nanoTime();
      while (received < expected) {
        if (poll(false) > 0) continue;
        // what UC and UD dropped will not come
        if (!reliable && System.nanoTime() - lastReceiveAt > QUIET_NANOS) break;
        idle.idle("the peer's SENDs");
      }
      receivedBase = reliable ? expected : received;
    }
    if (mine == null) {
      tell(PeerLink.DONE, run, 0, 0, 0, 0);
    } else {
      tell(PeerLink.DONE, run, mine.iterations(), Double.doubleToRawLongBits(mine.peakMBps()),
          Double.doubleToRawLongBits(mine.averageMBps()),
          Double.doubleToRawLongBits(mine.msgRateMpps()));
    }
    while (!link.heard(PeerLink.DONE, run)) {
      if (poll(false) == 0) idle.idle("the peer's figures");
    }
    peer = !spec.bidirectional() ? null : new BwResult(size, link.value(PeerLink.DONE, 0),
        Double.longBitsToDouble(link.value(PeerLink.DONE, 1)),
        Double.longBitsToDouble(link.value(PeerLink.DONE, 2)),
        Double.longBitsToDouble(link.value(PeerLink.DONE, 3)));
    awaitControl();
  }

  private void tell(int slot, int run, long v0, long v1, long v2, long v3) {
    awaitControl(); // a send queue may have one entry
    if (link.tell(slot, run, v0, v1, v2, v3)) controlOutstanding++;
  }

  /**
   * Waits for the link's writes to complete. A QP gone down meanwhile is the peer's disconnect
   * after the last run (it has what it waited for), or shows at this side's next wait.
   */
  private void awaitControl() {
    while (controlOutstanding > 0 && flushed == null) {
      if (poll(false) == 0) idle.idle("the link's write");
    }
  }

  private PerfFailure failed(int i) {
    return new PerfFailure("work completion failed: " + wcs.describe(i) + " ("
        + wcs.status(i).description + ")");
  }
}
