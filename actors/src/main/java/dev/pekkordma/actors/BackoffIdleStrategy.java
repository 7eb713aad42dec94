package dev.pekkordma.actors;

/**
 * What a poller does after an empty poll: spin a while, then yield a while, then block on the
 * completion channel. Any work resets it, so a busy poller never blocks and an idle one costs
 * no CPU. Not thread-safe: one per poller.
 */
public final class BackoffIdleStrategy {
  /** The next step after an empty poll. */
  public enum Step { SPIN, YIELD, BLOCK }

  private final int maxSpins;
  private final int maxYields;
  private int spins;
  private int yields;

  public BackoffIdleStrategy(int maxSpins, int maxYields) {
    if (maxSpins < 0 || maxYields < 0) {
      throw new IllegalArgumentException(
          "spins and yields must be >= 0: " + maxSpins + ", " + maxYields);
    }
    this.maxSpins = maxSpins;
    this.maxYields = maxYields;
  }

  /** Call after an empty poll; SPIN and YIELD are done here, BLOCK is left to the caller. */
  public Step idle() {
    if (spins < maxSpins) {
      spins++;
      Thread.onSpinWait();
      return Step.SPIN;
    }
    if (yields < maxYields) {
      yields++;
      Thread.yield();
      return Step.YIELD;
    }
    return Step.BLOCK;
  }

  /** Call after a poll that found work. */
  public void reset() {
    spins = 0;
    yields = 0;
  }
}
