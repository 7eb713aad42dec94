package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
/**
 * Never waits: for latency-critical users who give each poller a core. A stop or a close is
 * seen within one round.
 */
@InternalApi
public final class BusySpinIdleStrategy implements IdleStrategy {
  @Override
  public void idle(int workCount, Agent agent) {
    if (workCount == 0) Thread.onSpinWait();
  }
}
