package dev.pekkordma.soft;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The device's send pipeline: one thread that works the send queues of QPs with posted
 * requests, as a NIC does, so that posting returns at once and the peer's memory is reached
 * with no code of either application taking part.
 */
final class SoftEngine implements Runnable {
  static final int BATCH = 64;
  /** QPs worked in one section at most, so that the first one's completions are not held long. */
  private static final int QPS_PER_SECTION = 16;
  private final ArrayBlockingQueue<SoftQp> ready; // a QP is in it at most once
  private final Thread thread;
  private volatile boolean running = true;

  SoftEngine(String name, int maxQps) {
    ready = new ArrayBlockingQueue<>(maxQps);
    thread = new Thread(this, name);
    thread.setDaemon(true);
    thread.start();
  }

  /** Queues the QP's send queue for work unless it is queued already. */
  void schedule(SoftQp qp) {
    if (qp.requester.markScheduled()) {
      if (!ready.offer(qp)) { // more QPs than the queue was sized for: a provider bug
        qp.requester.clearScheduled();
        qp.engineFailure(new IllegalStateException(thread.getName() + " has "
            + ready.size() + " QPs queued already"));
        return;
      }
      LockSupport.unpark(thread);
      if (!running) handBack(); // stopped meanwhile: its thread may have drained already
    }
  }

  @Override
  public void run() {
    while (running) {
      SoftQp qp = ready.poll();
      if (qp == null) {
        LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(100));
        continue;
      }
      // the QPs ready now are one section: their requests to a link go out in one flush, and
      // their completions' wake-ups after it
      DeferredWork section = DeferredWork.enter();
      try {
        int worked = 0;
        do {
          qp.requester.clearScheduled();
          qp.requester.work(BATCH);
        } while (++worked < QPS_PER_SECTION && (qp = ready.poll()) != null);
      } finally {
        section.exit();
      }
    }
    handBack();
  }

  /**
   * Hands the QPs still queued on a stopped engine (a retired link's) to the engine that serves
   * each now. Left here, a QP would stay marked as scheduled and no engine would ever take it.
   */
  private void handBack() {
    for (SoftQp qp; (qp = ready.poll()) != null; ) {
      qp.requester.clearScheduled();
      SoftEngine now = qp.engine();
      if (now != this) now.schedule(qp); // the same stopped engine: its device is closing
    }
  }

  void stop() {
    running = false;
    LockSupport.unpark(thread);
  }
}
