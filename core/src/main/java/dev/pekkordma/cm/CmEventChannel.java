package dev.pekkordma.cm;

import java.time.Duration;

/** A connection manager event channel ({@code rdma_event_channel}). */
public interface CmEventChannel extends AutoCloseable {
  /** A new id for reliable connections ({@code rdma_create_id} with RDMA_PS_TCP). */
  default CmId createId(Object context) {
    return createId(context, RdmaPortSpace.TCP);
  }

  /**
   * A new id in {@code space} ({@code rdma_create_id}); a space the provider or device does not
   * serve fails naming it (EPROTONOSUPPORT).
   */
  CmId createId(Object context, RdmaPortSpace space);

  /** The next event, waiting at most {@code timeout}; null when none came. */
  CmEvent awaitEvent(Duration timeout);

  /**
   * Runs {@code posted} in the thread that queues each later event, right after queueing it: a
   * provider whose events start in this JVM (the software one) lets a reader take them there,
   * with {@code awaitEvent(Duration.ZERO)}, and save its own wake-up. {@code posted} must be
   * quick and must not block: the thread may hold the provider's locks. False when the provider
   * cannot (the native one: its events come from the kernel); then nothing changes.
   */
  default boolean notifyOnPost(Runnable posted) {
    return false;
  }

  /** Fails with EBUSY while ids on it are alive. */
  @Override
  void close();
}
