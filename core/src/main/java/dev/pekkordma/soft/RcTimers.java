package dev.pekkordma.soft;

import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.WcStatus;
import java.util.concurrent.TimeUnit;

/**
 * An RC requester's timers, as a NIC keeps them: the transport timer (no answer within the QP's
 * local ACK timeout: send again from the oldest unanswered request, {@code retry_cnt} times, then
 * RETRY_EXC_ERR) and the RNR timer (the peer had no receive: wait its min_rnr_timer, {@code
 * rnr_retry} times). Checks run on the provider's timer thread, one per timeout period rather
 * than one per request. Guarded by the QP's monitor.
 */
final class RcTimers {
  /** IB's RNR timer encoding, in microseconds (index = min_rnr_timer). */
  private static final long[] RNR_MICROS = {655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320,
      480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440,
      81920, 122880, 163840, 245760, 327680, 491520};

  private final SoftQp qp;
  private final Requester requester;
  private int retryLeft;
  private int rnrLeft;
  /** Sending stopped until a delay passes (an RNR wait, or a loss seen in this JVM). */
  private boolean paused;
  /** Bumped by resets: checks scheduled before one find nothing to do. */
  private int generation;
  /** When the oldest unanswered request to a peer in another process last saw progress. */
  private long progressNanos;
  private boolean armed;

  RcTimers(SoftQp qp, Requester requester) {
    this.qp = qp;
    this.requester = requester;
  }

  /** RTR to RTS: the retry counters start full. */
  void start() {
    retryLeft = qp.retryCount;
    rnrLeft = qp.rnrRetry;
  }

  /** A reset, a flush or the QP's end: every check and wait scheduled is void. */
  void reset() {
    paused = false;
    generation++;
    armed = false;
  }

  boolean paused() {
    return paused;
  }

  /** An answer that moved the queue on: the counters start full again. */
  void progress() {
    progressNanos = System.nanoTime();
    retryLeft = qp.retryCount;
    rnrLeft = qp.rnrRetry;
  }

  /** An RNR NAK: waits the peer's timer and tries again; false when no retry is left. */
  boolean rnrRetry(int rnrTimer) {
    if (qp.rnrRetry != 7 && rnrLeft == 0) return false; // 7 means for ever
    if (qp.rnrRetry != 7) rnrLeft--;
    progressNanos = System.nanoTime(); // an answer: the transport timer starts again
    pause(RNR_MICROS[rnrTimer & 31], false);
    return true;
  }

  /** A request lost on the way (a peer in this JVM that is gone): retried after the timeout. */
  void lost() {
    pause(qp.transportTimeoutMicros(), true);
  }

  /**
   * Before a request goes to a peer in another process: the transport timer runs while
   * requests are unanswered.
   */
  void arm() {
    synchronized (qp) {
      if (requester.firstOut()) progressNanos = System.nanoTime();
      if (armed || qp.timeout == 0) return; // 0: wait for ever, as the spec says
      armed = true;
      scheduleCheck(qp.transportTimeoutMicros());
    }
  }

  /** Stops sending and rewinds to the head; resumes (retrying the head) after the delay. */
  private void pause(long micros, boolean transportTimeout) {
    if (paused) return;
    paused = true;
    requester.rewind();
    if (micros == Long.MAX_VALUE) return; // timeout 0: wait for ever
    int g = ++generation;
    qp.device.provider.timer().schedule(() -> resume(g, transportTimeout), Math.max(1, micros),
        TimeUnit.MICROSECONDS);
  }

  private void resume(int g, boolean transportTimeout) {
    DeferredWork signals = DeferredWork.enter();
    try {
      synchronized (qp) {
        if (g != generation || !paused || qp.isClosed()) return;
        paused = false;
        if (transportTimeout && !retry()) return;
      }
      qp.schedule();
    } finally {
      signals.exit();
    }
  }

  /** One transport retry, or RETRY_EXC_ERR when none is left; false when the QP failed. */
  private boolean retry() {
    if (retryLeft == 0) {
      if (requester.unanswered() && qp.state == QpState.RTS) {
        qp.device.portTally.retriesExceeded.increment();
        qp.noteError("no answer from " + qp.describePeer() + " within " + qp.timeoutDescription());
        requester.completeHead(WcStatus.RETRY_EXC_ERR, 0);
      }
      return false;
    }
    retryLeft--;
    qp.device.portTally.retries.increment();
    return true;
  }

  private void scheduleCheck(long micros) {
    int g = generation;
    qp.device.provider.timer().schedule(() -> check(g), Math.max(1, micros),
        TimeUnit.MICROSECONDS);
  }

  private void check(int g) {
    DeferredWork signals = DeferredWork.enter();
    boolean resend = false;
    try {
      synchronized (qp) {
        // unanswered: everything posted and not completed, sent or not: after a rewind the
        // engine may not have sent the head again yet (stuck connecting, say), and that counts
        if (qp.isClosed() || g != generation || qp.state != QpState.RTS
            || !requester.unanswered()) {
          armed = false;
          return;
        }
        long timeoutNanos = qp.transportTimeoutMicros() * 1000;
        long waited = System.nanoTime() - progressNanos;
        if (paused || waited < timeoutNanos) { // answered meanwhile, or an RNR wait
          scheduleCheck(Math.max(1, (timeoutNanos - waited) / 1000));
          return;
        }
        armed = false;
        if (!retry()) return;
        // the timer runs on by itself: the engine may still be stuck on the way to the peer
        requester.rewind();
        progressNanos = System.nanoTime();
        armed = true;
        scheduleCheck(qp.transportTimeoutMicros());
        resend = true;
      }
    } finally {
      signals.exit();
    }
    if (resend) qp.schedule();
  }
}
