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
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs agents on one thread of the pinned poller dispatcher: round after round, each agent's
 * {@link Agent#doWork}, then the idle strategy. Each round is one message to itself, so a stop
 * is never more than one round (at most a block timeout) away. Several agents may share the
 * thread: then none can block on its own channel, and an empty round parks for at most {@link
 * #SHARED_PARK} instead, which trades a little wake latency for a thread. An agent that fails
 * is logged and keeps its place; one that throws {@link Agent.Terminated} stops the runner.
 */
@InternalApi
public final class AgentRunner {
  private static final Logger log = LoggerFactory.getLogger(AgentRunner.class);
  /** The longest an empty round of several agents parks. */
  public static final Duration SHARED_PARK = Duration.ofMillis(1);

  private final ActorRef<Round> self;
  private final CompletableFuture<Done> stopped = new CompletableFuture<>();
  private volatile boolean running = true;

  private enum Round implements DeadLetterSuppression { NEXT, STOP }

  private AgentRunner(Spawner spawner, String name, String dispatcher, IdleStrategy idle,
      Agent... agents) {
    if (agents.length == 0) throw new IllegalArgumentException("a runner needs an agent");
    List<Agent> all = List.of(agents);
    Agent waitOn = all.size() == 1 ? all.get(0) : new SharedThread(all);
    this.self = spawner.spawn(behavior(idle, all, waitOn), name,
        DispatcherSelector.fromConfig(dispatcher));
  }

  private interface Spawner {
    ActorRef<Round> spawn(Behavior<Round> behavior, String name, DispatcherSelector dispatcher);
  }

  /** Starts {@code agents} on a thread of their own, as a system actor named {@code name}. */
  public static AgentRunner start(ActorSystem<?> system, String name, String dispatcher,
      IdleStrategy idle, Agent... agents) {
    return new AgentRunner(system::systemActorOf, name, dispatcher, idle, agents);
  }

  /**
   * As {@link #start}, as a child of {@code parent}: it stops before its parent's PostStop, so
   * that the parent may free what the agents use.
   */
  public static AgentRunner spawn(ActorContext<?> parent, String name, String dispatcher,
      IdleStrategy idle, Agent... agents) {
    return new AgentRunner(parent::spawn, name, dispatcher, idle, agents);
  }

  /** The runner's actor, to watch. */
  public ActorRef<?> ref() {
    return self;
  }

  /** Stops after the round in progress; completes once every agent's onClose has run. */
  public CompletionStage<Done> stop() {
    self.tell(Round.STOP);
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

  private Behavior<Round> behavior(IdleStrategy idle, List<Agent> agents, Agent waitOn) {
    return Behaviors.setup(ctx -> {
      ctx.getSelf().tell(Round.NEXT);
      return Behaviors.receive(Round.class)
          .onMessageEquals(Round.NEXT, () -> {
            int work = 0;
            for (Agent a : agents) {
              try {
                work += a.doWork();
              } catch (Agent.Terminated t) {
                log.debug("{}: {}", a.roleName(), t.getMessage());
                return Behaviors.stopped();
              } catch (RuntimeException e) {
                log.error("{} failed a round", a.roleName(), e);
              }
            }
            idle.idle(work, waitOn);
            ctx.getSelf().tell(Round.NEXT);
            return Behaviors.same();
          })
          .onMessageEquals(Round.STOP, Behaviors::stopped)
          .onSignal(PostStop.class, s -> {
            running = false;
            for (Agent a : agents) {
              try {
                a.onClose();
              } catch (RuntimeException e) {
                log.error("{} failed to close", a.roleName(), e);
              }
            }
            stopped.complete(Done.getInstance());
            return Behaviors.same();
          })
          .build();
    });
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
