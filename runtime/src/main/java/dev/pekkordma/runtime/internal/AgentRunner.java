package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.Done;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs agents on a plain thread of their own, named after the runner (as Agrona's runner does):
 * round after round, each agent's {@link Agent#doWork}, then the idle strategy, with nothing
 * allocated per round. Several agents may share the thread: then none can block on its own
 * channel, and an empty round parks for at most {@link #SHARED_PARK} instead. An agent that
 * fails a round is logged and keeps its place; one that throws {@link Agent.Terminated} ends
 * the runner.
 *
 * <p>Its lifetime is an actor's, the runner's handle: a system actor, or a child of the actor
 * whose resources the agents use. The thread starts with the handle, and the handle's stop waits
 * for the thread's last round (a stop is at most one round, a block timeout, away) and the
 * agents' {@link Agent#onClose}; so a parent stopping its children frees what the agents used
 * only after they are done with it, and a system's termination ends every runner.
 */
@InternalApi
public final class AgentRunner {
  private static final Logger log = LoggerFactory.getLogger(AgentRunner.class);
  /** The longest an empty round of several agents parks. */
  public static final Duration SHARED_PARK = Duration.ofMillis(1);
  /**
   * The longest a handle's stop waits for the thread: a round ends within the block timeout
   * (at most 10 s, {@code pekko-rdma.runtime.poller.block-timeout}) unless an agent hangs.
   */
  private static final Duration LAST_ROUND = Duration.ofSeconds(15);

  private final String threadName;
  private final IdleStrategy idle;
  private final List<Agent> agents;
  private final Agent waitOn;
  private final ActorRef<Stop> handle;
  private final CompletableFuture<Done> stopped = new CompletableFuture<>();
  private volatile boolean stopAsked;
  private volatile boolean running = true;
  private volatile Thread thread;

  /** The handle's one message: the thread's agents are done, or someone asks it to stop. */
  private enum Stop implements DeadLetterSuppression { INSTANCE }

  private interface Spawner {
    ActorRef<Stop> spawn(Behavior<Stop> behavior, String name, Props props);
  }

  private AgentRunner(Spawner spawner, String systemName, String name, String what,
      IdleStrategy idle, Agent... agents) {
    if (agents.length == 0) throw new IllegalArgumentException("a runner needs an agent");
    this.threadName = systemName + "-" + (what.startsWith("pekko-rdma-") ? what
        : "pekko-rdma-" + what);
    this.idle = idle;
    this.agents = List.of(agents);
    this.waitOn = this.agents.size() == 1 ? this.agents.get(0) : new SharedThread(this.agents);
    this.handle = spawner.spawn(handle(), name, Props.empty());
  }

  /**
   * Starts {@code agents} on a thread of their own, named {@code <system>-<name>} (with {@code
   * pekko-rdma-} before the name unless it begins so), its handle a system actor named {@code
   * name}.
   */
  public static AgentRunner start(ActorSystem<?> system, String name, IdleStrategy idle,
      Agent... agents) {
    return new AgentRunner(system::systemActorOf, system.name(), name, name, idle, agents);
  }

  /**
   * As {@link #start}, its handle a child of {@code parent} named {@code name}, its thread
   * named for {@code what} it does: the handle stops before its parent's PostStop, so that the
   * parent may free what the agents use.
   */
  public static AgentRunner spawn(ActorContext<?> parent, String name, String what,
      IdleStrategy idle, Agent... agents) {
    return new AgentRunner(parent::spawn, parent.getSystem().name(), name, what, idle, agents);
  }

  /** The runner's handle, to watch: it stops when the runner has. */
  public ActorRef<?> ref() {
    return handle;
  }

  /** Stops after the round in progress; completes once every agent's onClose has run. */
  public CompletionStage<Done> stop() {
    stopAsked = true;
    handle.tell(Stop.INSTANCE);
    return stopped;
  }

  /** Completes once the runner has stopped, whoever stopped it. */
  public CompletionStage<Done> whenStopped() {
    return stopped;
  }

  /** False from the moment the agents' onClose starts. */
  public boolean isRunning() {
    return running;
  }

  private Behavior<Stop> handle() {
    return Behaviors.setup(ctx -> {
      // the handle as its setup knows it: the thread may end before the constructor has it
      ActorRef<Stop> self = ctx.getSelf();
      Thread t = new Thread(() -> run(self), threadName);
      t.setDaemon(true);
      thread = t;
      t.start();
      return Behaviors.receive(Stop.class)
          .onMessageEquals(Stop.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> {
            awaitThread();
            return Behaviors.same();
          })
          .build();
    });
  }

  /** In the handle's PostStop: asks the thread to stop and waits for its last round. */
  private void awaitThread() {
    stopAsked = true;
    Thread t = thread;
    if (t == null || t == Thread.currentThread()) return;
    try {
      t.join(LAST_ROUND.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) {
      log.error("{}: its agents did not end their round within {}; their handle stops without"
          + " them", threadName, LAST_ROUND);
    }
  }

  private void run(ActorRef<Stop> self) {
    try {
      rounds();
    } finally {
      running = false;
      for (Agent a : agents) {
        try {
          a.onClose();
        } catch (RuntimeException e) {
          log.error("{} failed to close", a.roleName(), e);
        }
      }
      stopped.complete(Done.getInstance());
      if (!stopAsked) self.tell(Stop.INSTANCE); // the agents ended: so does the handle
    }
  }

  private void rounds() {
    while (!stopAsked) {
      int work = 0;
      for (Agent a : agents) {
        try {
          work += a.doWork();
        } catch (Agent.Terminated t) {
          log.debug("{}: {}", a.roleName(), t.getMessage());
          return;
        } catch (RuntimeException e) {
          log.error("{} failed a round", a.roleName(), e);
        }
      }
      idle.idle(work, waitOn);
    }
  }

  /** Several agents on one thread: none may block the others, so waiting is a short park. */
  private record SharedThread(List<Agent> agents) implements Agent {
    @Override
    public int doWork() {
      return 0;
    }

    @Override
    public void awaitWork(Duration timeout) {
      LockSupport.parkNanos(Math.min(timeout.toNanos(), SHARED_PARK.toNanos()));
    }

    @Override
    public String roleName() {
      return "agents " + agents.stream().map(Agent::roleName).toList();
    }
  }
}
