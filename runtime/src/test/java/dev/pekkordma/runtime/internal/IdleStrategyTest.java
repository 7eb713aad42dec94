package dev.pekkordma.runtime.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdleStrategyTest {
  /** Records each wait it is asked for instead of waiting. */
  static final class Waits implements Agent {
    final List<Duration> waits = new ArrayList<>();

    @Override
    public int doWork() {
      return 0;
    }

    @Override
    public void awaitWork(Duration timeout) {
      waits.add(timeout);
    }

    @Override
    public String roleName() {
      return "waits";
    }
  }

  @Test
  void backoffSpinsThenYieldsThenWaitsOnTheAgentAndWorkStartsItOver() {
    Waits agent = new Waits();
    Duration block = Duration.ofMillis(7);
    BackoffIdleStrategy idle = new BackoffIdleStrategy(3, 2, block);
    for (int i = 0; i < 5; i++) idle.idle(0, agent); // three spins, two yields
    assertEquals(List.of(), agent.waits);
    idle.idle(0, agent);
    idle.idle(0, agent);
    assertEquals(List.of(block, block), agent.waits);
    idle.idle(1, agent); // work
    for (int i = 0; i < 5; i++) idle.idle(0, agent);
    assertEquals(2, agent.waits.size(), "the budget started over");
  }

  @Test
  void noBudgetWaitsAtOnceAndBadArgumentsAreRefused() {
    Waits agent = new Waits();
    new BackoffIdleStrategy(0, 0, Duration.ofMillis(1)).idle(0, agent);
    assertEquals(1, agent.waits.size());
    assertThrows(IllegalArgumentException.class,
        () -> new BackoffIdleStrategy(-1, 0, Duration.ofMillis(1)));
    assertThrows(IllegalArgumentException.class,
        () -> new BackoffIdleStrategy(0, 0, Duration.ZERO));
  }

  @Test
  void busySpinNeverWaits() {
    Waits agent = new Waits();
    BusySpinIdleStrategy idle = new BusySpinIdleStrategy();
    for (int i = 0; i < 1000; i++) idle.idle(0, agent);
    assertEquals(List.of(), agent.waits);
  }
}
