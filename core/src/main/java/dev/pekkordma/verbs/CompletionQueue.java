package dev.pekkordma.verbs;

/** A completion queue ({@code ibv_cq}). */
public interface CompletionQueue extends AutoCloseable {
  DeviceContext context();

  /** The number of entries it holds (at least what was asked). */
  int capacity();

  CompletionChannel channel();

  /**
   * Moves up to {@code completions.capacity()} completions into {@code completions} ({@code
   * ibv_poll_cq}) and returns how many; 0 when empty. Throws when the CQ is in error (overrun).
   */
  int poll(WorkCompletions completions);

  /** Arms the channel for the next completion, or the next solicited one ({@code ibv_req_notify_cq}). */
  void requestNotify(boolean solicitedOnly);

  /** Resizes ({@code ibv_resize_cq}); fails when fewer entries than are now in it. */
  void resize(int cqe);

  /** Destroys; fails with EBUSY while QPs use it or channel events are unacknowledged. */
  @Override
  void close();
}
