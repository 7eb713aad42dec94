package dev.pekkordma.runtime.internal;

import java.time.Duration;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AgentRunnerTest {
  static final ActorTestKit kit = ActorTestKit.create("AgentRunnerTest");

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
    AgentRunner runner = AgentRunner.start(kit.system(), "shared",
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
    assertEquals("AgentRunnerTest-pekko-rdma-shared", a.threads.peek(), "named after its runner");
  }

  @Test
  void aParentStopsAfterItsRunnersLastRoundAndTheAgentsClose() throws Exception {
    CountDownLatch inRound = new CountDownLatch(1);
    AtomicInteger agentClosed = new AtomicInteger();
    AtomicInteger closedAtParentsStop = new AtomicInteger(-1);
    Worker slow = new Worker("slow") {
      @Override
      public int doWork() {
        inRound.countDown();
        LockSupport.parkNanos(Duration.ofMillis(200).toNanos());
        return 0;
      }

      @Override
      public void onClose() {
        agentClosed.set(1);
      }
    };
    AgentRunner[] runner = new AgentRunner[1];
    var parent = kit.spawn(Behaviors.<Object>setup(ctx -> {
      runner[0] = AgentRunner.spawn(ctx, "slow", "slow", new BusySpinIdleStrategy(), slow);
      return Behaviors.receive(Object.class)
          .onSignal(PostStop.class, s -> {
            closedAtParentsStop.set(agentClosed.get());
            return Behaviors.same();
          })
          .build();
    }), "parent");
    assertTrue(inRound.await(10, TimeUnit.SECONDS));
    kit.stop(parent, Duration.ofSeconds(10));
    assertEquals(1, closedAtParentsStop.get(), "the agent closed before its parent's PostStop");
    assertFalse(runner[0].isRunning());
    assertTrue(runner[0].whenStopped().toCompletableFuture().isDone());
  }

  @Test
  void anAgentThatEndsStopsItsHandle() throws Exception {
    Worker ending = new Worker("ending") {
      @Override
      public int doWork() {
        throw new Terminated("over");
      }
    };
    AgentRunner runner = AgentRunner.start(kit.system(), "ending", new BusySpinIdleStrategy(),
        ending);
    kit.createTestProbe().expectTerminated(runner.ref(), Duration.ofSeconds(10));
    assertEquals(0, ending.closed.getCount());
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
    AgentRunner runner = AgentRunner.start(kit.system(), "terminating",
        new BusySpinIdleStrategy(), w);
    runner.whenStopped().toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(3, rounds.get());
    assertTrue(w.closed.await(1, TimeUnit.SECONDS), "onClose ran");
  }
}
