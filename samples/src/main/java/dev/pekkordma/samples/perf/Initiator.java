package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.Allocations;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;

/**
 * The measuring side (perftest's client): for each size a warm-up run, then a measured run whose
 * post and completion times make the result line.
 *
 * <ul>
 *   <li>Bandwidth: {@link BwLoop}'s, on every QP, counted or timed; a bidirectional run's
 *       figures add the peer's.
 *   <li>Send latency: a SEND, then the peer's SEND back; write latency: an RDMA WRITE whose last
 *       byte the peer watches for, then the peer's write back (the CQ is polled only when the
 *       send queue needs room); read latency: one RDMA READ at a time.
 * </ul>
 */
final class Initiator extends Loops {
  /** Listens to the result lines as they are made. */
  interface Lines {
    /** {@code peer}: the peer's share of a bidirectional {@code r}, else null. */
    void bandwidth(BwResult r, BwResult peer);

    void latency(LatResult r);
  }

  private final long[] posted;
  private final BwLoop bw;
  private long loopAllocatedBytes;
  private long requests;

  /** {@code link}: how to reach the peer between bandwidth runs. */
  Initiator(PerfSide side, IdleWatch idle, PeerLink link) {
    super(side, idle);
    boolean bandwidth = spec.test().bandwidth();
    posted = new long[bandwidth ? 0 : Math.max(spec.iterations(), spec.maxWarmup())];
    bw = !bandwidth ? null
        : BwLoop.initiator(side, idle, spec.responderWorks() ? link : null);
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
    int[] sizes = spec.sizes();
    for (int i = 0; i < sizes.length; i++) {
      int size = sizes[i];
      if (t.bandwidth()) {
        int warmup = spec.warmupPerQp(size);
        if (warmup > 0) bw.run(2 * i, size, warmup, false);
        long before = Allocations.currentThread();
        BwResult r = bw.run(2 * i + 1, size, n, true);
        long after = Allocations.currentThread();
        loopAllocatedBytes = before < 0 ? -1 : loopAllocatedBytes + (after - before);
        requests += bw.requests();
        BwResult peer = bw.peer();
        lines.bandwidth(peer == null ? r : r.plus(peer), peer);
        continue;
      }
      int warmup = spec.warmupFor(size);
      if (warmup > 0) runOnce(size, warmup);
      long before = Allocations.currentThread();
      runOnce(size, n);
      long after = Allocations.currentThread();
      loopAllocatedBytes = before < 0 ? -1 : loopAllocatedBytes + (after - before);
      requests += n;
      lines.latency(LatResult.of(size, n, posted, t.verb() == PerfTest.Verb.READ ? 1 : 2));
    }
  }

  private void runOnce(int size, int n) {
    switch (spec.test()) {
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
