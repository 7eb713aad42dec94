package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.Allocations;
import dev.pekkordma.verbs.WrOpcode;

/**
 * The answering side (perftest's server). It knows the whole run from the client's request, so
 * it follows along without a word more: for send bandwidth it keeps receives posted until every
 * message came; for send and write latency it answers each message with one of the same size;
 * for write and read bandwidth and read latency its NIC does the work and it only waits.
 */
final class PerfResponder extends Loops {
  private static final long PARK_NANOS = 20_000;
  private long loopAllocatedBytes = -1;
  private long requests;

  PerfResponder(PerfSide side, Idle idle) {
    super(side, idle);
  }

  /** Heap bytes the measured loops allocated (-1 where the JVM does not count, or none ran). */
  long loopAllocatedBytes() {
    return loopAllocatedBytes;
  }

  /** Requests the measured loops answered. */
  long requests() {
    return requests;
  }

  /** Serves the whole run; returns when this side's part is done. */
  void run() {
    PerfTest t = spec.test();
    if (t == PerfTest.SEND_BW) {
      // hundreds of receives posted ahead: no need to spin against the provider for them
      idle.parkWhenIdle(PARK_NANOS);
    } else if (t != PerfTest.SEND_LAT && t != PerfTest.WRITE_LAT) {
      return; // one-sided: the NIC does the work
    }
    long allocated = 0;
    for (int size : spec.sizes()) {
      int warmup = spec.warmupFor(size);
      if (warmup > 0) runOnce(t, size, warmup);
      long before = Allocations.currentThread();
      runOnce(t, size, spec.iterations());
      long after = Allocations.currentThread();
      allocated = before < 0 ? -1 : allocated + (after - before);
      requests += spec.iterations();
    }
    loopAllocatedBytes = allocated;
    if (t == PerfTest.SEND_BW) rearm();
  }

  private void runOnce(PerfTest t, int size, int n) {
    if (t == PerfTest.SEND_BW) {
      receive(n);
    } else if (t == PerfTest.SEND_LAT) {
      answerSends(size, n);
    } else {
      answerWrites(size, n);
    }
  }

  /** Takes {@code n} messages; any beyond (the next run's) are left for the next call. */
  private void receive(long n) {
    while (received - taken < n) {
      if (pollOnce() == 0) idle.idle("the client's SENDs");
    }
    taken += n;
  }

  private void answerSends(int size, int n) {
    long local = side.source;
    for (int i = 0; i < n; i++) {
      awaitMessage("the client's SEND");
      awaitSendRoom();
      postOne(WrOpcode.SEND, flags(i, n, size), local, size, 0, 0);
    }
    drainSends();
  }

  private void answerWrites(int size, int n) {
    long local = side.source;
    long remote = side.remote.address();
    int rkey = side.remote.rkey();
    for (int i = 0; i < n; i++) {
      byte seq = nextSequence();
      awaitByte(size, seq);
      awaitSendRoom();
      stamp(size, seq);
      postOne(WrOpcode.RDMA_WRITE, flags(i, n, size), local, size, remote, rkey);
    }
    drainSends();
  }
}
