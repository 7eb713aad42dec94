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

  /**
   * Hands each later event to {@code handler}, already acknowledged, in the thread that raises
   * it, instead of queueing it for {@link #awaitEvent}: a provider whose events start in this
   * JVM (the software one) saves the reader's wake-up this way. The handler must be quick and
   * must not block or call into the provider. False when the provider cannot (the native one:
   * its events come from the kernel); then nothing changes. Call it before any CQ uses the
   * channel.
   */
  default boolean deliverTo(java.util.function.Consumer<CompletionQueue> handler) {
    return false;
  }

  /** Fails with EBUSY while a CQ still uses it. */
  @Override
  void close();
}
