package dev.pekkordma.actors;

import static dev.pekkordma.actors.BackoffIdleStrategy.Step.*;
import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class BackoffIdleStrategyTest {
  @Test
  void spinsThenYieldsThenBlocksAndWorkStartsItOver() {
    BackoffIdleStrategy idle = new BackoffIdleStrategy(3, 2);
    assertEquals(SPIN, idle.idle());
    assertEquals(SPIN, idle.idle());
    assertEquals(SPIN, idle.idle());
    assertEquals(YIELD, idle.idle());
    assertEquals(YIELD, idle.idle());
    assertEquals(BLOCK, idle.idle());
    assertEquals(BLOCK, idle.idle());
    idle.reset();
    assertEquals(SPIN, idle.idle());
  }

  @Test
  void noBudgetBlocksAtOnce() {
    assertEquals(BLOCK, new BackoffIdleStrategy(0, 0).idle());
    assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(-1, 0));
  }
}
