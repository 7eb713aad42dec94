package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

/**
 * A poller's duty, in the shape Agrona made standard: an {@link AgentRunner} calls {@link
 * #doWork} round after round on its thread and hands the work count to an {@link
 * IdleStrategy}, which decides whether to spin, yield or wait. Waiting is the agent's own
 * business ({@link #awaitWork}): most agents block on their channel. Not thread-safe: an agent
 * runs on one runner only.
 */
@InternalApi
public interface Agent {
  /** What can be done now without waiting; the amount done, 0 when there was nothing. */
  int doWork();

  /**
   * Waits at most {@code timeout} for work, blocking on the agent's channel; returns as soon as
   * there may be some. What it reads on the way is kept for the next {@link #doWork}.
   */
  default void awaitWork(Duration timeout) {
    LockSupport.parkNanos(timeout.toNanos());
  }

  /** In the runner's thread, after the last round: free what the agent holds. */
  default void onClose() {}

  /** For thread names and logs. */
  String roleName();

  /** Thrown from {@link #doWork} to stop the runner: the agent's work is over for good. */
  final class Terminated extends RuntimeException {
    public Terminated(String why) {
      super(why, null, false, false);
    }
  }
}
