package dev.pekkordma.verbs;

import java.time.Duration;

/**
 * A completion channel ({@code ibv_comp_channel}). A CQ notifies it once per {@link
 * CompletionQueue#requestNotify} and never without one.
 */
public interface CompletionChannel extends AutoCloseable {
  /** The CQ that fired ({@code ibv_get_cq_event}), waiting at most {@code timeout}; else null. */
  CompletionQueue awaitEvent(Duration timeout);

  /** Acknowledges events ({@code ibv_ack_cq_events}); a CQ with unacknowledged ones can't close. */
  void ackEvents(CompletionQueue cq, int count);

  /** Fails with EBUSY while a CQ still uses it. */
  @Override
  void close();
}
