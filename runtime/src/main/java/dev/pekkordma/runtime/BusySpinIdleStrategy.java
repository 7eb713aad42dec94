package dev.pekkordma.runtime;

/**
 * Never waits: for latency-critical users who give each poller a core. A stop or a close is
 * seen within one round.
 */
public final class BusySpinIdleStrategy implements IdleStrategy {
  @Override
  public void idle(int workCount, Agent agent) {
    if (workCount == 0) Thread.onSpinWait();
  }
}
