package dev.pekkordma.samples.perf;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * What a polling loop does when there was nothing: spin a little, then yield the core (on a
 * small machine the peer, or the software provider's engine, needs it), and now and then check
 * that it has not waited too long and that the peer is still there. Allocates nothing until it
 * fails.
 */
final class IdleWatch {
  private static final int SPINS = 64;
  private static final int CHECK_EVERY = 256;

  private final long timeoutNanos;
  private final BooleanSupplier peerGone;
  private long parkNanos;
  private int idles;
  private long since;

  /** {@code peerGone} is asked now and then while idle; true ends the wait with a failure. */
  IdleWatch(long timeoutNanos, BooleanSupplier peerGone) {
    this.timeoutNanos = timeoutNanos;
    this.peerGone = peerGone;
  }

  /**
   * Sleeps this long instead of yielding once spinning did not help: for a side with slack
   * (receives posted well ahead) whose polling would only contend with the provider.
   */
  void parkWhenIdle(long nanos) {
    parkNanos = nanos;
  }

  /** Something happened: the next wait starts afresh. */
  void progress() {
    idles = 0;
    since = 0;
  }

  /** Nothing happened; {@code waitingFor} names what for, for the failure. */
  void idle(String waitingFor) {
    int n = ++idles;
    if (n < SPINS) {
      Thread.onSpinWait();
      return;
    }
    if (parkNanos > 0) {
      LockSupport.parkNanos(parkNanos);
    } else {
      Thread.yield();
    }
    if (n % CHECK_EVERY != 0) return;
    long now = System.nanoTime();
    if (since == 0) {
      since = now;
    } else if (now - since > timeoutNanos) {
      throw new PerfFailure("nothing happened for " + timeoutNanos / 1_000_000_000L
          + " s while waiting for " + waitingFor);
    }
    if (peerGone.getAsBoolean()) {
      throw new PerfFailure("the peer went away while this side waited for " + waitingFor, true);
    }
  }
}
