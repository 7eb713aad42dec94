package dev.pekkordma.soft;

import java.io.Closeable;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The moment a handshake must be over, whatever it is doing then: a timer closes the sockets it
 * guards, so that a peer that sends a byte now and then is cut off as surely as a silent one
 * (a read timeout alone restarts with every byte). Whoever decides first, the handshake settling
 * or the timer firing, decides once.
 */
final class Deadline {
  private final long at;
  private final String setting;
  private final List<Closeable> guarded = new CopyOnWriteArrayList<>();
  private final AtomicBoolean decided = new AtomicBoolean();
  private volatile boolean expired;
  private final Runnable onExpiry;
  private final ScheduledFuture<?> timer;

  /**
   * @param setting the setting that gave the time, for messages
   * @param onExpiry run once if the time runs out first (after the sockets are closed)
   */
  Deadline(ScheduledExecutorService timers, long nanos, String setting, Runnable onExpiry) {
    this.at = System.nanoTime() + nanos;
    this.setting = setting;
    this.onExpiry = onExpiry;
    this.timer = timers.schedule(() -> {
      if (decided.compareAndSet(false, true)) expire();
    }, nanos, TimeUnit.NANOSECONDS);
  }

  private void expire() {
    expired = true;
    for (Closeable c : guarded) closeQuietly(c);
    onExpiry.run();
  }

  /** Closes {@code c} when the time runs out (at once, if it has). */
  void guard(Closeable c) {
    guarded.add(c);
    if (expired) closeQuietly(c);
  }

  /**
   * Ends the count: true if the handshake was in time, false if the time ran out first, whether
   * or not the timer has fired yet (a step that failed for want of time is not the peer's fault).
   */
  boolean settle() {
    if (!decided.compareAndSet(false, true)) return false;
    timer.cancel(false);
    if (at - System.nanoTime() > 0) return true;
    expire();
    return false;
  }

  boolean expired() {
    return expired;
  }

  /** Milliseconds left, at least 1 (for socket timeouts, where 0 means for ever). */
  int remainingMillis() throws SocketTimeoutException {
    long left = at - System.nanoTime();
    if (left <= 0) throw overdue();
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left)));
  }

  /** What to throw when the time ran out mid-read. */
  SocketTimeoutException overdue() {
    return new SocketTimeoutException("the handshake did not finish in time (" + setting + ")");
  }

  private static void closeQuietly(Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }
}
