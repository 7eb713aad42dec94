package dev.pekkordma.verbs;

import java.time.Duration;

/** An open device ({@code ibv_context}). */
public interface DeviceContext extends AutoCloseable {
  RdmaDevice device();

  DeviceAttributes queryDevice();

  PortAttributes queryPort(int port);

  Gid queryGid(int port, int index);

  /**
   * The port's counters now ({@code rdma statistic show}); a device that keeps none answers
   * with every field {@link PortCounters#NOT_COUNTED}.
   */
  PortCounters queryPortCounters(int port);

  ProtectionDomain allocPd();

  CompletionChannel createCompletionChannel();

  /** A completion queue of at least {@code cqe} entries, notifying {@code channel} if not null. */
  CompletionQueue createCq(int cqe, CompletionChannel channel);

  /**
   * The next asynchronous event ({@code ibv_get_async_event} + ack), waiting at most {@code
   * timeout}; null when none came.
   */
  AsyncEvent nextAsyncEvent(Duration timeout);

  /** Closes the device; fails with EBUSY naming what is still open on it. */
  @Override
  void close();
}
