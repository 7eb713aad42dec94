package dev.pekkordma.samples;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Waiting for connection manager events with a deadline and a way to give up early. */
public final class CmEvents {
  private static final Duration SLICE = Duration.ofMillis(100);

  private CmEvents() {}

  /**
   * The next event, or null when {@code timeout} passed or {@code stop} said so. Events are
   * returned whatever their type: the caller decides what an unexpected one means.
   */
  public static CmEvent next(CmEventChannel channel, Duration timeout, BooleanSupplier stop) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!stop.getAsBoolean()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) return null;
      CmEvent ev = channel.awaitEvent(left < SLICE.toNanos() ? Duration.ofNanos(left) : SLICE);
      if (ev != null) return ev;
    }
    return null;
  }

  /** The next event, which must be of type {@code expected}; else a failure naming what came. */
  public static CmEvent expect(CmEventChannel channel, CmEventType expected, Duration timeout,
      String doing) {
    CmEvent ev = next(channel, timeout, () -> false);
    if (ev == null) {
      throw new TransferFailure(doing + ": no " + expected + " event within " + timeout.toMillis()
          + " ms");
    }
    if (ev.type() != expected) {
      throw new TransferFailure(doing + ": expected " + expected + ", got " + describe(ev));
    }
    return ev;
  }

  public static String describe(CmEvent ev) {
    if (ev.type() == CmEventType.REJECTED) {
      String reason = BulkWire.decodeReject(ev.privateData());
      if (reason != null) return "REJECTED by the server: " + reason;
      if (ev.status() == CmEvent.REJECT_NO_LISTENER) return "REJECTED: nobody listens there";
    }
    return ev.toString();
  }
}
