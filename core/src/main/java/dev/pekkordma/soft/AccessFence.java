package dev.pekkordma.soft;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Guards the memory a registration grants: every copy into or out of it runs between {@link
 * #enter} and {@link #exit}, and {@link #close} returns only once no copy is in progress and none
 * can start. A copy is one bounded chunk, so the wait is short and never depends on a peer.
 *
 * <p>The state is one long: a generation (32 bits), a closed bit and the copies in progress. A
 * check of a key records the generation it saw; a re-registration or a window's rebinding
 * closes the fence, changes the range and {@link #reopen}s it in a new generation, so a copy
 * checked against the old range cannot enter the new one.
 */
final class AccessFence {
  private static final long CLOSED = 1L << 31;
  private static final long COUNT = CLOSED - 1;
  private static final long GENERATION = 1L << 32;
  /** A drain that waits this long has found a copy that does not end: a provider bug. */
  private static final long STUCK_NANOS = TimeUnit.SECONDS.toNanos(30);

  private final AtomicLong state = new AtomicLong();
  private volatile Thread waiter;

  /** The generation a check records for {@link #enter}. */
  int generation() {
    return (int) (state.get() >>> 32);
  }

  /** Starts a copy checked in {@code generation}; false if closed or re-registered since. */
  boolean enter(int generation) {
    while (true) {
      long s = state.get();
      if ((s & CLOSED) != 0 || (int) (s >>> 32) != generation) return false;
      if (state.compareAndSet(s, s + 1)) return true;
    }
  }

  void exit() {
    long s = state.decrementAndGet();
    if ((s & CLOSED) != 0 && (s & COUNT) == 0) {
      Thread t = waiter;
      if (t != null) LockSupport.unpark(t);
    }
  }

  /** Stops new copies and waits for those in progress. Callers serialize close and reopen. */
  void close() {
    shut();
  }

  /** Opens a closed fence in a new generation: copies checked before it no longer enter. */
  void reopen() {
    long s = state.get();
    if ((s & CLOSED) == 0) throw new IllegalStateException("the fence is open");
    state.set(((s >>> 32) + 1) << 32);
  }

  boolean isClosed() {
    return (state.get() & CLOSED) != 0;
  }

  private void shut() {
    long s;
    do {
      s = state.get();
    } while ((s & CLOSED) == 0 && !state.compareAndSet(s, s | CLOSED));
    waiter = Thread.currentThread();
    long start = System.nanoTime();
    boolean interrupted = false;
    try {
      while (((s = state.get()) & COUNT) != 0) {
        if (System.nanoTime() - start > STUCK_NANOS) {
          throw new IllegalStateException("a copy into registered memory has not ended in "
              + TimeUnit.NANOSECONDS.toSeconds(STUCK_NANOS) + " s");
        }
        LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
        if (Thread.interrupted()) interrupted = true;
      }
    } finally {
      waiter = null;
      if (interrupted) Thread.currentThread().interrupt();
    }
  }
}
