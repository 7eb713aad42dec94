package dev.pekkordma.soft;

import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;

/**
 * One warning per refused connection or frame, naming the peer and the reason; under a flood at
 * most {@link #PER_SECOND} lines a second, then one line saying how many went unlogged. Counted,
 * so tests and metrics can see refusals without reading logs.
 */
final class RefusalLog {
  static final int PER_SECOND = 20;
  private final Logger log;
  private final String what;
  private final AtomicLong total = new AtomicLong();
  private long windowStart;
  private int inWindow;
  private long suppressed;

  RefusalLog(Logger log, String what) {
    this.log = log;
    this.what = what;
  }

  void refuse(String peer, String reason) {
    total.incrementAndGet();
    long unlogged;
    synchronized (this) {
      long now = System.nanoTime();
      if (now - windowStart > 1_000_000_000L) {
        windowStart = now;
        inWindow = 0;
      }
      if (++inWindow > PER_SECOND) {
        suppressed++;
        return;
      }
      unlogged = suppressed;
      suppressed = 0;
    }
    if (unlogged > 0) log.warn("{}: {} more refusals were not logged", what, unlogged);
    log.warn("{} refused {}: {}", what, peer, reason);
  }

  long total() {
    return total.get();
  }
}
