package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.Closeable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Who decides a handshake's deadline, the handshake settling or the time running out: once. */
class DeadlineTest {
  private static final ScheduledExecutorService TIMERS =
      Executors.newSingleThreadScheduledExecutor();

  @AfterAll
  static void stop() {
    TIMERS.shutdownNow();
  }

  @Test
  void settlingInTimeWinsAndTheTimerDoesNothing() throws Exception {
    AtomicInteger expiries = new AtomicInteger();
    // long enough that a loaded machine settles in time, short enough to wait out
    Deadline d = new Deadline(TIMERS, 500_000_000L, "a-setting", expiries::incrementAndGet);
    AtomicInteger closes = new AtomicInteger();
    d.guard(closes::incrementAndGet);
    assertTrue(d.settle(), "settled in time");
    assertFalse(d.settle(), "a second settle decides nothing");
    Thread.sleep(700);
    assertFalse(d.expired(), "expired after settling");
    assertTrue(expiries.get() == 0 && closes.get() == 0, "the timer ran after settling");
  }

  @Test
  void settlingAfterTheMomentLosesEvenBeforeTheTimerFires() throws Exception {
    ScheduledExecutorService stalled = Executors.newSingleThreadScheduledExecutor();
    stalled.execute(() -> sleep(500)); // its timer thread is busy: the timer fires late
    try {
      AtomicInteger expiries = new AtomicInteger();
      Deadline d = new Deadline(stalled, 10_000_000L, "a-setting", expiries::incrementAndGet);
      AtomicInteger closes = new AtomicInteger();
      Closeable guarded = closes::incrementAndGet;
      d.guard(guarded);
      Thread.sleep(100);
      assertFalse(d.settle(), "settled 90 ms after the moment, the timer not fired yet");
      assertTrue(d.expired(), "expired() after losing");
      assertTrue(expiries.get() == 1 && closes.get() == 1,
          "the expiry ran once and closed what it guards: " + expiries + " " + closes);
    } finally {
      stalled.shutdownNow();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
