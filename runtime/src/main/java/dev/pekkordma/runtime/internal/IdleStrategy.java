package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
/**
 * What a runner does after each round of its agents: nothing after work, and its own rule
 * after an empty round. Not thread-safe: one per runner.
 */
@InternalApi
public interface IdleStrategy {
  /** After a round that did {@code workCount}; when the rule says wait, it waits on {@code agent}. */
  void idle(int workCount, Agent agent);
}
