package dev.pekkordma.actors;

import dev.pekkordma.actors.ConnectionActor.ConnectOutcome;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.runtime.internal.ConnectAttempt;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * A client connection's supervisor: runs a {@link ConnectAttempt} (resolve the address, the
 * route, then hand the id to a {@link ConnectionActor} that connects; one deadline, {@code
 * pekko-rdma.actors.cm.connect-timeout}, for all of it). A failed attempt is retried with backoff
 * up to {@code max-attempts}, and an established connection that is lost (its QP failed, its
 * device went) is made again the same way. A connection that is disconnected, or rejected by the
 * server, is not. Stops when its handler stops.
 */
final class Connector {
  private Connector() {}

  static final String CONNECT_TIMEOUT = "pekko-rdma.actors.cm.connect-timeout";

  interface Command {}

  record CmEventArrived(CmEvent event) implements Command {}

  record OutcomeArrived(ConnectOutcome outcome) implements Command {}

  private enum DeadlinePassed implements Command { INSTANCE }

  private enum Retry implements Command { INSTANCE }

  private record ConnectionGone(ActorRef<ConnectionActor.Command> connection) implements Command {}

  private enum HandlerGone implements Command { INSTANCE }

  static Behavior<Command> create(CmRouter router, InetSocketAddress remote, byte[] privateData,
      QpSpec qp, ActorRef<ConnectionActor.Event> handler, ActorRef<CmActor.Command> cm,
      RdmaActorsSettings settings) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
      ctx.watchWith(handler, HandlerGone.INSTANCE);
      State s = new State(ctx, timers, router, remote, privateData, qp, handler, cm, settings);
      return s.attempt(1);
    }));
  }

  private static final class State implements ConnectAttempt.ConnectSteps {
    private static final String DEADLINE = "deadline";
    private static final String RETRY = "retry";
    private final ActorContext<Command> ctx;
    private final TimerScheduler<Command> timers;
    private final CmRouter router;
    private final InetSocketAddress remote;
    private final byte[] privateData;
    private final QpSpec qp;
    private final ActorRef<ConnectionActor.Event> handler;
    private final ActorRef<CmActor.Command> cm;
    private final RdmaActorsSettings settings;
    private final ActorRef<CmEvent> events;
    private final ActorRef<ConnectOutcome> outcomes;
    private int attemptNumber;
    private ConnectAttempt attempt;
    /** What the attempt's last action decided: the behaviour to go on with. */
    private Behavior<Command> next;
    private CmId id; // ours while resolving; the connection's after
    private ActorRef<ConnectionActor.Command> connection;

    State(ActorContext<Command> ctx, TimerScheduler<Command> timers, CmRouter router,
        InetSocketAddress remote, byte[] privateData, QpSpec qp,
        ActorRef<ConnectionActor.Event> handler, ActorRef<CmActor.Command> cm,
        RdmaActorsSettings settings) {
      this.ctx = ctx;
      this.timers = timers;
      this.router = router;
      this.remote = remote;
      this.privateData = privateData;
      this.qp = qp;
      this.handler = handler;
      this.cm = cm;
      this.settings = settings;
      this.events = ctx.messageAdapter(CmEvent.class, CmEventArrived::new);
      this.outcomes = ctx.messageAdapter(ConnectOutcome.class, OutcomeArrived::new);
    }

    Behavior<Command> attempt(int n) {
      attemptNumber = n;
      next = null;
      attempt = new ConnectAttempt(settings.connectTimeout, CONNECT_TIMEOUT, System::nanoTime,
          this);
      attempt.resolve();
      return decided(Behaviors.receive(Command.class)
          .onMessage(CmEventArrived.class, e -> {
            if (e.event().id() == id) attempt.cmEvent(e.event()); // else an id given away
            return decided(Behaviors.same());
          })
          .onMessage(OutcomeArrived.class, o -> {
            outcome(o.outcome());
            return decided(Behaviors.same());
          })
          .onMessageEquals(DeadlinePassed.INSTANCE, () -> {
            attempt.deadlinePassed();
            return decided(Behaviors.same());
          })
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build());
    }

    /** The behaviour the attempt's actions chose, or {@code otherwise}. */
    private Behavior<Command> decided(Behavior<Command> otherwise) {
      Behavior<Command> b = next;
      next = null;
      return b != null ? b : otherwise;
    }

    /** How the connection actor's connect ended, as the attempt's events. */
    private void outcome(ConnectOutcome o) {
      if (o instanceof ConnectionActor.Established est) {
        connection = est.connection();
        attempt.cmEvent(est.event());
      } else if (o instanceof ConnectionActor.RejectedByPeer r) {
        attempt.cmEvent(r.event());
      } else if (o instanceof ConnectionActor.AttemptFailed f) {
        attempt.stepFailed(f.reason());
      }
    }

    // ------------------------------------------------------------ the attempt's actions

    @Override
    public void deadlineIn(Duration after) {
      timers.startSingleTimer(DEADLINE, DeadlinePassed.INSTANCE, after);
    }

    @Override
    public void resolveAddress(Duration timeLeft) {
      id = router.createId("client to " + remote);
      router.own(id, events);
      id.resolveAddress(null, remote, timeLeft);
    }

    @Override
    public void resolveRoute(Duration timeLeft) {
      id.resolveRoute(timeLeft);
    }

    /** The id goes to a connection actor on its device; it reports how the connect ends. */
    @Override
    public void connect(Duration timeLeft) {
      CmId handed = id;
      id = null;
      cm.tell(new CmActor.SpawnConnection(ConnectionActor.ConnectionSpec.active(
          router, handed, qp, privateData, handler, outcomes, timeLeft)));
    }

    @Override
    public void established(CmEvent event) {
      timers.cancel(DEADLINE);
      ctx.watchWith(connection, new ConnectionGone(connection));
      next = connected();
    }

    @Override
    public void rejected(CmEvent event) {
      timers.cancel(DEADLINE);
      handler.tell(new ConnectionActor.Rejected(remote, event.privateData()));
      next = Behaviors.stopped();
    }

    @Override
    public void failed(ConnectAttempt.Failure why) {
      timers.cancel(DEADLINE);
      if (id != null) {
        router.destroy(id, ctx.getLog());
        id = null;
      }
      if (attemptNumber >= settings.maxConnectAttempts) {
        handler.tell(new ConnectionActor.ConnectFailed(remote, why.reason(), attemptNumber));
        next = Behaviors.stopped();
      } else {
        next = retry(attemptNumber + 1, why.reason());
      }
    }

    // ------------------------------------------------------------ after the attempt

    private Behavior<Command> connected() {
      return Behaviors.receive(Command.class)
          .onMessage(OutcomeArrived.class, o -> {
            if (o.outcome() instanceof ConnectionActor.Ended end) {
              ctx.unwatch(connection);
              connection = null;
              return end.lost() ? retry(1, end.reason()) : Behaviors.stopped();
            }
            return Behaviors.same();
          })
          .onMessage(ConnectionGone.class, g -> {
            connection = null;
            return retry(1, "the connection actor stopped"); // a fresh count of attempts
          })
          .onMessage(CmEventArrived.class, e -> Behaviors.same())
          .onMessageEquals(DeadlinePassed.INSTANCE, Behaviors::same)
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    private Behavior<Command> retry(int nextAttempt, String reason) {
      Duration delay = settings.connectRetry.delay(Math.max(1, nextAttempt - 1));
      handler.tell(new ConnectionActor.Reconnecting(remote, nextAttempt, delay, reason));
      timers.startSingleTimer(RETRY, Retry.INSTANCE, delay);
      return Behaviors.receive(Command.class)
          .onMessageEquals(Retry.INSTANCE, () -> attempt(nextAttempt))
          .onMessage(OutcomeArrived.class, o -> {
            // the deadline passed as the connection came up: the attempt is over, so is it
            if (o.outcome() instanceof ConnectionActor.Established est) {
              est.connection().tell(ConnectionActor.Disconnect.INSTANCE);
            }
            return Behaviors.same();
          })
          .onMessage(CmEventArrived.class, e -> Behaviors.same())
          .onMessageEquals(DeadlinePassed.INSTANCE, Behaviors::same)
          .onMessage(ConnectionGone.class, g -> Behaviors.same())
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    private Behavior<Command> stop() {
      if (id != null) router.destroy(id, ctx.getLog());
      if (connection != null) connection.tell(ConnectionActor.Disconnect.INSTANCE);
      return Behaviors.same();
    }
  }
}
