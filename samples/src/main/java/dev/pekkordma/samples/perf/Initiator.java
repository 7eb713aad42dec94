package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.Allocations;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;

/**
 * The measuring side (perftest's client): for each size a warm-up run, then a measured run whose
 * post and completion times make the result line.
 *
 * <ul>
 *   <li>Bandwidth: keeps up to {@code txDepth} requests in flight, posting as many as there is
 *       room for in one batch, signaling one in every {@code cqModeration}.
 *   <li>Send latency: a SEND, then the peer's SEND back; write latency: an RDMA WRITE whose last
 *       byte the peer watches for, then the peer's write back (the CQ is polled only when the
 *       send queue needs room); read latency: one RDMA READ at a time.
 * </ul>
 */
final class Initiator extends Loops {
  /** Listens to the result lines as they are made. */
  interface Lines {
    void bandwidth(BwResult r);

    void latency(LatResult r);
  }

  private final long[] posted;
  private final long[] completed;
  private long loopAllocatedBytes;
  private long requests;

  Initiator(PerfSide side, Idle idle) {
    super(side, idle);
    int n = Math.max(spec.iterations(), spec.maxWarmup());
    posted = new long[n];
    completed = new long[spec.test().bandwidth() ? n : 1];
  }

  /** Heap bytes the measured loops allocated (-1 where the JVM does not count). */
  long loopAllocatedBytes() {
    return loopAllocatedBytes;
  }

  /** Requests the measured loops made. */
  long requests() {
    return requests;
  }

  void run(Lines lines) {
    PerfTest t = spec.test();
    int n = spec.iterations();
    for (int size : spec.sizes()) {
      int warmup = spec.warmupFor(size);
      if (warmup > 0) runOnce(size, warmup);
      long before = Allocations.currentThread();
      runOnce(size, n);
      long after = Allocations.currentThread();
      loopAllocatedBytes = before < 0 ? -1 : loopAllocatedBytes + (after - before);
      requests += n;
      if (t.bandwidth()) {
        lines.bandwidth(BwResult.of(size, n, posted, completed, cqMod));
      } else {
        lines.latency(LatResult.of(size, n, posted, t.verb() == PerfTest.Verb.READ ? 1 : 2));
      }
    }
  }

  private void runOnce(int size, int n) {
    switch (spec.test()) {
      case SEND_BW:
      case WRITE_BW:
      case READ_BW:
        bandwidth(size, n);
        break;
      case SEND_LAT:
        sendLatency(size, n);
        break;
      case WRITE_LAT:
        writeLatency(size, n);
        break;
      case READ_LAT:
        readLatency(size, n);
        break;
      default:
        throw new IllegalStateException(spec.test().name());
    }
  }

  private void bandwidth(int size, int n) {
    WrOpcode op = spec.test().verb().opcode;
    boolean rdma = op != WrOpcode.SEND;
    int tx = spec.txDepth();
    long local = side.source;
    int lkey = side.lkey;
    long remote = side.remote.address();
    int rkey = side.remote.rkey();
    int inline = spec.inline(size) ? SendRequests.INLINE : 0;
    int postedCount = 0;
    int done = 0;
    while (done < n) {
      if (postedCount < n && postedCount - done < tx) {
        sends.clear();
        int first = postedCount;
        while (postedCount < n && postedCount - done < tx) {
          int flags = BwResult.signaled(postedCount, cqMod, n) ? SendRequests.SIGNALED | inline
              : inline;
          sends.add(postedCount, op, flags).sge(local, size, lkey);
          if (rdma) sends.rdma(remote, rkey);
          postedCount++;
        }
        long t = System.nanoTime();
        for (int k = first; k < postedCount; k++) posted[k] = t;
        qp.postSend(sends);
      }
      int m = cq.poll(wcs);
      if (m == 0) {
        idle.idle("completions");
        continue;
      }
      long t = System.nanoTime();
      idle.progress();
      for (int i = 0; i < m; i++) {
        if (!wcs.ok(i)) throw failed(i);
        int j = (int) wcs.wrId(i);
        completed[j] = t;
        done = j + 1;
      }
    }
  }

  private void sendLatency(int size, int n) {
    long local = side.source;
    for (int i = 0; i < n; i++) {
      awaitSendRoom();
      posted[i] = System.nanoTime();
      postOne(WrOpcode.SEND, flags(i, n, size), local, size, 0, 0);
      awaitMessage("the peer's SEND");
    }
    drainSends();
  }

  private void writeLatency(int size, int n) {
    long local = side.source;
    long remote = side.remote.address();
    int rkey = side.remote.rkey();
    for (int i = 0; i < n; i++) {
      byte seq = nextSequence();
      awaitSendRoom();
      posted[i] = System.nanoTime();
      stamp(size, seq);
      postOne(WrOpcode.RDMA_WRITE, flags(i, n, size), local, size, remote, rkey);
      awaitByte(size, seq);
    }
    drainSends();
  }

  private void readLatency(int size, int n) {
    long local = side.target;
    long remote = side.remote.address();
    int rkey = side.remote.rkey();
    for (int i = 0; i < n; i++) {
      posted[i] = System.nanoTime();
      postOne(WrOpcode.RDMA_READ, SendRequests.SIGNALED, local, size, remote, rkey);
      while (sendsDone < sendsPosted) {
        if (pollOnce() == 0) idle.idle("the RDMA READ");
      }
    }
  }
}
