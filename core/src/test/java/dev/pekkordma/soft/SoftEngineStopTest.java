package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * A retired link's engine stops while a QP may still be queued on it (scheduled just before the
 * link retired, or just after it stopped). The QP must reach the engine that serves it now: left
 * queued, it would stay marked as scheduled, and no engine would ever work its send queue again.
 */
class SoftEngineStopTest {
  @Test
  void aQpQueuedOnAStoppedEngineGoesToTheEngineServingItNow() throws Exception {
    try (OneQp fx = new OneQp(4096)) {
      SoftQp qp = (SoftQp) fx.qp;
      for (boolean afterStop : new boolean[] {false, true}) {
        SoftEngine retired = new SoftEngine("soft-rdma-link-retired-test", 4);
        if (afterStop) {
          retired.stop();
          Thread.sleep(50); // its thread has ended
          retired.schedule(qp);
        } else {
          retired.schedule(qp);
          retired.stop();
        }
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!qp.requester.markScheduled()) { // still marked: queued somewhere, or stranded
          assertTrue(System.nanoTime() < deadline, "the QP stayed queued on a stopped engine"
              + (afterStop ? " (scheduled after it stopped)" : ""));
          Thread.sleep(1);
        }
        qp.requester.clearScheduled();
      }
    }
  }
}
