package dev.pekkordma.actors;

import dev.pekkordma.actors.ConnectionActor.ConnectOutcome;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;

/**
 * A client connection's supervisor: resolves the address, then the route, then hands the id to
 * a {@link ConnectionActor} that connects. Each step has a timeout; a failed attempt is retried
 * with backoff up to {@code max-attempts}, and an established connection that is lost (its QP
 * failed, its device went) is made again the same way. A connection that is disconnected, or
 * rejected by the server, is not. Stops when its handler stops.
 */
final class Connector {
  private Connector() {}

  interface Command {}

  record CmEventArrived(CmEvent event) implements Command {}

  record OutcomeArrived(ConnectOutcome outcome) implements Command {}

  private record StepTimedOut(long step, String what) implements Command {}

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

  private static final class State {
    private static final String STEP = "step";
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
    private int attempt;
    private long step;
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
      attempt = n;
      try {
        id = router.createId("client to " + remote);
        router.own(id, events);
        id.resolveAddress(null, remote, settings.resolveAddressTimeout);
      } catch (RuntimeException e) {
        return failed("rdma_resolve_addr: " + e.getMessage());
      }
      guard("ADDR_RESOLVED", settings.resolveAddressTimeout);
      return Behaviors.receive(Command.class)
          .onMessage(CmEventArrived.class, e -> e.event().id() != id ? Behaviors.same()
              : switch (e.event().type()) {
                case ADDR_RESOLVED -> resolveRoute();
                default -> failed(e.event().outcome());
              })
          .onMessage(StepTimedOut.class, this::timedOut)
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    private Behavior<Command> resolveRoute() {
      try {
        id.resolveRoute(settings.resolveRouteTimeout);
      } catch (RuntimeException e) {
        return failed("rdma_resolve_route: " + e.getMessage());
      }
      guard("ROUTE_RESOLVED", settings.resolveRouteTimeout);
      return Behaviors.receive(Command.class)
          .onMessage(CmEventArrived.class, e -> e.event().id() != id ? Behaviors.same()
              : switch (e.event().type()) {
                case ROUTE_RESOLVED -> connect();
                default -> failed(e.event().outcome());
              })
          .onMessage(StepTimedOut.class, this::timedOut)
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    /** The id goes to a connection actor on its device; it reports how the attempt ends. */
    private Behavior<Command> connect() {
      CmId handed = id;
      id = null;
      cm.tell(
          new CmActor.SpawnConnection(
              ConnectionActor.ConnectionSpec.active(
                  router, handed, qp, privateData, handler, outcomes)));
      // the connection has its own connect timeout; this covers one that never starts
      guard("an established connection", settings.connectTimeout.multipliedBy(2));
      return Behaviors.receive(Command.class)
          .onMessage(OutcomeArrived.class, o -> outcome(o.outcome()))
          .onMessage(StepTimedOut.class, this::timedOut)
          .onMessage(CmEventArrived.class, e -> Behaviors.same()) // an id given away
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    private Behavior<Command> outcome(ConnectOutcome o) {
      if (o instanceof ConnectionActor.Established est) {
        timers.cancel(STEP);
        connection = est.connection();
        ctx.watchWith(connection, new ConnectionGone(connection));
        return connected();
      }
      if (o instanceof ConnectionActor.AttemptFailed f) return failed(f.reason());
      if (o instanceof ConnectionActor.RejectedByPeer r) {
        handler.tell(new ConnectionActor.Rejected(remote, r.privateData()));
        return Behaviors.stopped();
      }
      return Behaviors.same();
    }

    private Behavior<Command> connected() {
      return Behaviors.receive(Command.class)
          .onMessage(OutcomeArrived.class, o -> {
            if (o.outcome() instanceof ConnectionActor.Ended end) {
              ctx.unwatch(connection);
              connection = null;
              return end.lost() ? lost(end.reason()) : Behaviors.stopped();
            }
            return Behaviors.same();
          })
          .onMessage(ConnectionGone.class, g -> {
            connection = null;
            return lost("the connection actor stopped");
          })
          .onMessage(CmEventArrived.class, e -> Behaviors.same())
          .onMessage(StepTimedOut.class, t -> Behaviors.same())
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    /** An established connection failed: connect again, with a fresh count of attempts. */
    private Behavior<Command> lost(String reason) {
      return retry(1, reason);
    }

    private Behavior<Command> failed(String reason) {
      timers.cancel(STEP);
      if (id != null) {
        router.destroy(id, ctx.getLog());
        id = null;
      }
      if (attempt >= settings.maxConnectAttempts) {
        handler.tell(new ConnectionActor.ConnectFailed(remote, reason, attempt));
        return Behaviors.stopped();
      }
      return retry(attempt + 1, reason);
    }

    private Behavior<Command> retry(int next, String reason) {
      Duration delay = settings.connectRetry.delay(Math.max(1, next - 1));
      handler.tell(new ConnectionActor.Reconnecting(remote, next, delay, reason));
      timers.startSingleTimer(RETRY, Retry.INSTANCE, delay);
      return Behaviors.receive(Command.class)
          .onMessageEquals(Retry.INSTANCE, () -> attempt(next))
          .onMessage(OutcomeArrived.class, o -> Behaviors.same())
          .onMessage(CmEventArrived.class, e -> Behaviors.same())
          .onMessage(StepTimedOut.class, t -> Behaviors.same())
          .onMessage(ConnectionGone.class, g -> Behaviors.same())
          .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> stop())
          .build();
    }

    private void guard(String what, Duration timeout) {
      // the provider enforces the timeout itself; this is for an answer that never comes
      timers.startSingleTimer(STEP, new StepTimedOut(++step, what),
          timeout.plus(Duration.ofSeconds(1)));
    }

    private Behavior<Command> timedOut(StepTimedOut t) {
      if (t.step() != step) return Behaviors.same();
      return failed("no " + t.what() + " in time");
    }

    private Behavior<Command> stop() {
      if (id != null) router.destroy(id, ctx.getLog());
      if (connection != null) connection.tell(ConnectionActor.Disconnect.INSTANCE);
      return Behaviors.same();
    }
  }
}
