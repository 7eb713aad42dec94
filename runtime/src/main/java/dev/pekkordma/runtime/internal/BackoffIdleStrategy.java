package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import java.time.Duration;

/**
 * After an empty round: spin a while, then yield a while, then wait on the agent (which blocks
 * on its channel) for at most the block timeout. Any work starts the count again, so a busy
 * poller never blocks and an idle one costs no CPU.
 */
@InternalApi
public final class BackoffIdleStrategy implements IdleStrategy {
  private final int maxSpins;
  private final int maxYields;
  private final Duration blockTimeout;
  private int spins;
  private int yields;

  public BackoffIdleStrategy(int maxSpins, int maxYields, Duration blockTimeout) {
    if (maxSpins < 0 || maxYields < 0) {
      throw new IllegalArgumentException(
          "spins and yields must be >= 0: " + maxSpins + ", " + maxYields);
    }
    if (blockTimeout.isNegative() || blockTimeout.isZero()) {
      throw new IllegalArgumentException("the block timeout must be positive: " + blockTimeout);
    }
    this.maxSpins = maxSpins;
    this.maxYields = maxYields;
    this.blockTimeout = blockTimeout;
  }

  @Override
  public void idle(int workCount, Agent agent) {
    if (workCount > 0) {
      spins = 0;
      yields = 0;
    } else if (spins < maxSpins) {
      spins++;
      Thread.onSpinWait();
    } else if (yields < maxYields) {
      yields++;
      Thread.yield();
    } else {
      agent.awaitWork(blockTimeout);
    }
  }
}
