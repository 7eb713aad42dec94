package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.WorkCompletions;

/**
 * Drains a CQ that its owner polls when woken: polls until it is empty, arms it, and polls once
 * more, since a completion that came between the last poll and the arming raised no event and
 * would otherwise wait for the next one.
 */
@InternalApi
public final class CqDrain {
  private CqDrain() {}

  /** Takes one completion; false stops the draining (its owner has ended). */
  @FunctionalInterface
  public interface Sink {
    boolean completed(WorkCompletions wcs, int index);
  }

  /**
   * Hands every completion {@code cq} holds to {@code sink}, in batches of {@code wcs}: true when
   * the CQ is empty and armed, false when the sink stopped it first (the CQ is then not armed).
   */
  public static boolean drain(CompletionQueue cq, WorkCompletions wcs, Sink sink) {
    while (true) {
      int n = cq.poll(wcs);
      if (n == 0) {
        cq.requestNotify(false);
        n = cq.poll(wcs);
        if (n == 0) return true;
      }
      for (int i = 0; i < n; i++) {
        if (!sink.completed(wcs, i)) return false;
      }
    }
  }
}
