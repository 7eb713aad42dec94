package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.Allocations;
import dev.pekkordma.verbs.WrOpcode;

/**
 * The answering side (perftest's server). It knows the whole run from the client's request, so
 * it follows along: for send bandwidth it keeps receives posted until the client says its run
 * is over (a bidirectional run sends too: {@link BwLoop}); for send and write latency it answers
 * each message with one of the same size; for write and read bandwidth and read latency its NIC
 * does the work and it only waits.
 */
final class PerfResponder extends Loops {
  private static final long PARK_NANOS = 20_000;
  private long loopAllocatedBytes = -1;
  private long requests;

  private final PeerLink link;

  PerfResponder(PerfSide side, IdleWatch idle, PeerLink link) {
    super(side, idle);
    this.link = link;
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
    if (t.bandwidth()) {
      if (spec.responderWorks()) bandwidth();
      return; // else one-sided: the NIC does the work
    }
    if (t != PerfTest.SEND_LAT && t != PerfTest.WRITE_LAT) return;
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
  }

  /** Receives the client's sends, and with -b sends as the client does, run for run. */
  private void bandwidth() {
    if (!spec.bidirectional()) {
      // hundreds of receives posted ahead: no need to spin against the provider for them
      idle.parkWhenIdle(PARK_NANOS);
    }
    BwLoop bw = BwLoop.responder(side, idle, link);
    long allocated = 0;
    int[] sizes = spec.sizes();
    for (int i = 0; i < sizes.length; i++) {
      int warmup = spec.warmupPerQp(sizes[i]);
      if (warmup > 0) bw.run(2 * i, sizes[i], warmup, false);
      long before = Allocations.currentThread();
      bw.run(2 * i + 1, sizes[i], spec.iterations(), true);
      long after = Allocations.currentThread();
      allocated = before < 0 ? -1 : allocated + (after - before);
      requests += bw.requests();
    }
    loopAllocatedBytes = allocated;
  }

  private void runOnce(PerfTest t, int size, int n) {
    if (t == PerfTest.SEND_LAT) {
      answerSends(size, n);
    } else {
      answerWrites(size, n);
    }
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
