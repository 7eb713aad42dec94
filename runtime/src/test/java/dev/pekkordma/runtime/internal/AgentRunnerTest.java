package dev.pekkordma.runtime.internal;

import dev.pekkordma.runtime.RuntimeSettings;
import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AgentRunnerTest {
  static final ActorTestKit kit = ActorTestKit.create("AgentRunnerTest");
  static final String DISPATCHER = RuntimeSettings.from(kit.system().settings().config())
      .pollerDispatcher;

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  /** Takes work from a queue; remembers the threads it ran on and whether it was closed. */
  static class Worker implements Agent {
    final String name;
    final ConcurrentLinkedQueue<Runnable> work = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> threads = new ConcurrentLinkedQueue<>();
    final CountDownLatch closed = new CountDownLatch(1);

    Worker(String name) {
      this.name = name;
    }

    @Override
    public int doWork() {
      threads.add(Thread.currentThread().getName());
      Runnable r = work.poll();
      if (r == null) return 0;
      r.run();
      return 1;
    }

    @Override
    public void onClose() {
      closed.countDown();
    }

    @Override
    public String roleName() {
      return name;
    }
  }

  @Test
  void severalAgentsShareOneThreadAndAllGetTheirWorkDone() throws Exception {
    Worker a = new Worker("a");
    Worker b = new Worker("b");
    AgentRunner runner = AgentRunner.start(kit.system(), "shared", DISPATCHER,
        new BackoffIdleStrategy(10, 10, Duration.ofMillis(50)), a, b);
    CountDownLatch done = new CountDownLatch(200);
    for (int i = 0; i < 100; i++) {
      a.work.add(done::countDown);
      b.work.add(done::countDown);
    }
    assertTrue(done.await(10, TimeUnit.SECONDS), "both agents' work was done");
    runner.stop().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(0, a.closed.getCount());
    assertEquals(0, b.closed.getCount());
    assertFalse(runner.isRunning());
    assertEquals(1, a.threads.stream().distinct().count(), "one thread: " + a.threads);
    assertEquals(a.threads.peek(), b.threads.peek());
  }

  @Test
  void anAgentThatFailsARoundKeepsItsPlaceAndOneThatTerminatesStopsTheRunner() throws Exception {
    AtomicInteger rounds = new AtomicInteger();
    Worker w = new Worker("failing") {
      @Override
      public int doWork() {
        int n = rounds.incrementAndGet();
        if (n == 1) throw new IllegalStateException("one bad round");
        if (n == 3) throw new Terminated("done");
        return 0;
      }
    };
    AgentRunner runner = AgentRunner.start(kit.system(), "terminating", DISPATCHER,
        new BusySpinIdleStrategy(), w);
    runner.whenStopped().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(3, rounds.get());
    assertTrue(w.closed.await(1, TimeUnit.SECONDS), "onClose ran");
  }
}
