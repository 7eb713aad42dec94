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
  private final ArrayBlockingQueue<SoftQp> ready; // a QP is in it at most once
  private final Thread thread;
  private volatile boolean running = true;

  SoftEngine(String deviceName, int maxQps) {
    ready = new ArrayBlockingQueue<>(maxQps);
    thread = new Thread(this, "soft-rdma-engine-" + deviceName);
    thread.setDaemon(true);
    thread.start();
  }

  /** Queues the QP's send queue for work unless it is queued already. */
  void schedule(SoftQp qp) {
    if (qp.markScheduled()) {
      ready.add(qp);
      LockSupport.unpark(thread);
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
      qp.clearScheduled();
      qp.work(BATCH);
    }
  }

  void stop() {
    running = false;
    LockSupport.unpark(thread);
  }
}
