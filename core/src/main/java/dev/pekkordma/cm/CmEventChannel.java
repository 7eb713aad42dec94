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

  /** Fails with EBUSY while ids on it are alive. */
  @Override
  void close();
}
