package dev.pekkordma.actors;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.runtime.internal.AcceptAttempt;
import dev.pekkordma.runtime.internal.ConnectAttempt;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.pattern.StatusReply;
import org.slf4j.Logger;

/**
 * One RDMA CM connection, either side: owns the CM id and, as its child, the QP actor of the
 * connection's QP (made through the id, so the CM moves it through its states). A server
 * connection asks the listener's handler to accept or reject; a client connection connects and
 * reports to its connector. Once established the handler gets the QP actor and the buffer pool
 * for the data path. A connection that fails or ends stops itself, which destroys its QP and id
 * and gives its buffers back; nothing else.
 */
public final class ConnectionActor {
  private ConnectionActor() {}

  public sealed interface Command {}

  /** Accept the request with private data; {@code handler} hears this connection's events. */
  public record Accept(byte[] privateData, ActorRef<Event> handler) implements Command {}

  /** Reject the request with private data (at most 148 bytes). */
  public record Reject(byte[] privateData) implements Command {}

  /**
   * Disconnect: the connection reports {@link Disconnected} and stops. A connection that ended
   * first has done it already, so a Disconnect reaching it stopped is no dead letter.
   */
  public enum Disconnect implements Command, DeadLetterSuppression { INSTANCE }

  record CmEventArrived(CmEvent event) implements Command {}

  record QpCreated(StatusReply<ActorRef<QpActor.Command>> reply) implements Command {}

  record QpEventArrived(QpActor.Event event) implements Command {}

  private record Timeout(String what) implements Command {}

  /** What a connection's handler hears. */
  public sealed interface Event {}

  /** Established: post work to {@code qp} with buffers of {@code pool}. */
  public record Connected(ActorRef<Command> connection, ActorRef<QpActor.Command> qp,
      BufferPool pool, byte[] privateData, InetSocketAddress local, InetSocketAddress remote)
      implements Event {}

  /** The server rejected the client's request; not retried. */
  public record Rejected(InetSocketAddress remote, byte[] privateData) implements Event {}

  /** The client gave up after {@code attempts} attempts. */
  public record ConnectFailed(InetSocketAddress remote, String reason, int attempts)
      implements Event {}

  /** The client tries again after {@code delay}. */
  public record Reconnecting(InetSocketAddress remote, int attempt, Duration delay, String reason)
      implements Event {}

  /** Disconnected by this side or the peer; the connection has stopped. */
  public record Disconnected(ActorRef<Command> connection, boolean byPeer) implements Event {}

  /** An established connection failed (its QP, its device); it has stopped. */
  public record ConnectionLost(ActorRef<Command> connection, String reason) implements Event {}

  /** How an established connection ended. */
  private enum Ending {
    /** An error: the QP failed, or the device went. */
    LOST,
    /** This side disconnected (even when rdma_disconnect failed or no DISCONNECTED came). */
    DISCONNECTED_HERE,
    /** The peer disconnected first. */
    DISCONNECTED_BY_PEER
  }

  /** What a client connection tells its connector. */
  sealed interface ConnectOutcome {}

  record Established(ActorRef<Command> connection, CmEvent event) implements ConnectOutcome {}

  /** The attempt failed before it was established; {@code retry} if trying again may help. */
  record AttemptFailed(String reason, boolean retry)
      implements ConnectOutcome, DeadLetterSuppression {}

  record RejectedByPeer(CmEvent event) implements ConnectOutcome {}

  /**
   * An established connection ended: lost (a failure) or disconnected. Like AttemptFailed, the
   * last word to a connector, which may have stopped first (it was told to stop): no dead letter.
   */
  record Ended(String reason, boolean lost) implements ConnectOutcome, DeadLetterSuppression {}

  /**
   * What makes a connection: its id and side. A server connection has the listener's handler, a
   * client connection its connector, private data, handler and what is left of its attempt's
   * deadline ({@code connectWithin}).
   */
  record ConnectionSpec(CmRouter router, CmId id, boolean active, QpSpec qp, byte[] privateData,
      ActorRef<Event> handler, ActorRef<ListenerActor.Event> listener,
      ActorRef<ConnectOutcome> connector, Duration connectWithin) {

    static ConnectionSpec passive(CmRouter router, CmId id, QpSpec qp, byte[] privateData,
        ActorRef<ListenerActor.Event> listener) {
      return new ConnectionSpec(router, id, false, qp, privateData, null, listener, null, null);
    }

    static ConnectionSpec active(CmRouter router, CmId id, QpSpec qp, byte[] privateData,
        ActorRef<Event> handler, ActorRef<ConnectOutcome> connector, Duration connectWithin) {
      return new ConnectionSpec(router, id, true, qp, privateData, handler, null, connector,
          connectWithin);
    }

    /** No connection actor could be made for it: refuse or fail the attempt, destroy the id. */
    void abandon(String reason, Logger log) {
      if (active) {
        router.destroy(id, log);
        connector.tell(new AttemptFailed(reason, true));
      } else {
        router.refuse(id, null, log);
      }
    }
  }

  static Behavior<Command> create(ConnectionSpec spec, DeviceSession session, ProtectionDomain pd,
      BufferPool pool) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(
        timers -> new State(ctx, timers, spec, session, pd, pool).start()));
  }

  private static final class State {
    private static final String ACCEPT_TIMEOUT = "pekko-rdma.actors.cm.accept-timeout";
    private static final Object SERVER_TIMER = "server";
    private final ActorContext<Command> ctx;
    private final TimerScheduler<Command> timers;
    private final ConnectionSpec spec;
    private final CmId id;
    private final BufferPool pool;
    private final RdmaActorsSettings settings;
    private final InetSocketAddress remote;
    private ActorRef<Event> handler;
    private ActorRef<QpActor.Command> qp;
    private Phase phase = Phase.STARTING;
    /** Whether the handler and connector heard how it ended; if not, PostStop tells them. */
    private boolean told;

    private enum Phase { STARTING, CONNECTING, DECIDING, ACCEPTING, ESTABLISHED, DISCONNECTING }

    State(ActorContext<Command> ctx, TimerScheduler<Command> timers, ConnectionSpec spec,
        DeviceSession session, ProtectionDomain pd, BufferPool pool) {
      this.ctx = ctx;
      this.timers = timers;
      this.spec = spec;
      this.id = spec.id();
      this.pool = pool;
      this.settings = session.settings;
      this.handler = spec.handler();
      this.remote = spec.id().remoteAddress();
      spec.router().own(id, ctx.messageAdapter(CmEvent.class, CmEventArrived::new));
      QpActor.QpMaker maker = new QpActor.QpMaker() {
        @Override
        public QueuePair create(ProtectionDomain p, QpInitAttributes attributes) {
          return id.createQp(p, attributes);
        }

        @Override
        public void destroy(QueuePair q) {
          id.destroyQp();
        }
      };
      ctx.spawn(QpActor.create(session, pd, spec.qp().withRestartOnFatal(false),
          ctx.messageAdapter(QpActor.Event.class, QpEventArrived::new), qpReplies(ctx), maker),
          "qp");
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ActorRef<StatusReply<ActorRef<QpActor.Command>>> qpReplies(
        ActorContext<Command> ctx) {
      // a class literal cannot carry StatusReply's type argument
      return (ActorRef) ctx.messageAdapter(StatusReply.class, r -> new QpCreated((StatusReply) r));
    }

    Behavior<Command> start() {
      return done(receive()
          .onMessage(QpCreated.class, c -> {
            if (c.reply().isError()) {
              return failAttempt("no QP: " + c.reply().getError().getMessage());
            }
            qp = c.reply().getValue();
            ctx.watch(qp);
            return spec.active() ? connect() : askHandler();
          })
          .onMessage(CmEventArrived.class, e -> unexpectedBeforeEstablished(e.event())));
    }

    // -------------------------------------------------------------- client side

    private Behavior<Command> connect() {
      try {
        id.connect(ConnectionParameters.withPrivateData(spec.privateData()));
      } catch (RuntimeException e) {
        return failAttempt("rdma_connect: " + e.getMessage());
      }
      phase = Phase.CONNECTING;
      // the connector's deadline ends the attempt; this one gives the id back with it
      timers.startSingleTimer(new Timeout("connect"), spec.connectWithin());
      return done(receive()
          .onMessage(CmEventArrived.class, e -> {
            CmEvent ev = e.event();
            if (ev.type() == CmEventType.ESTABLISHED) return established(ev);
            if (ev.type() == CmEventType.REJECTED
                && ev.status() == CmEvent.REJECT_CONSUMER_DEFINED) {
              told = true;
              spec.connector().tell(new RejectedByPeer(ev));
              return Behaviors.stopped();
            }
            return unexpectedBeforeEstablished(ev);
          })
          .onMessage(Timeout.class, t -> failAttempt("no answer to the connect within "
              + spec.connectWithin() + " (the rest of pekko-rdma.actors.cm.connect-timeout)")));
    }

    // -------------------------------------------------------------- server side

    /** The server's request, decided by the listener's handler: an {@link AcceptAttempt}. */
    private Behavior<Command> askHandler() {
      phase = Phase.DECIDING;
      ServerSteps steps = new ServerSteps();
      AcceptAttempt attempt = new AcceptAttempt(settings.acceptTimeout, ACCEPT_TIMEOUT,
          settings.connectTimeout, Connector.CONNECT_TIMEOUT, steps);
      spec.listener().tell(new ListenerActor.ConnectionRequested(ctx.getSelf(),
          spec.privateData(), remote));
      return done(receive()
          .onMessage(Accept.class, a -> {
            if (attempt.step() == AcceptAttempt.RequestStep.REQUESTED) {
              handler = a.handler();
              steps.privateData = a.privateData();
            }
            attempt.accept();
            return steps.decided();
          })
          .onMessage(Reject.class, r -> {
            attempt.reject(r.privateData());
            return steps.decided();
          })
          .onMessage(Timeout.class, t -> {
            attempt.deadlinePassed();
            return steps.decided();
          })
          .onMessage(CmEventArrived.class, e -> {
            attempt.cmEvent(e.event());
            return steps.decided();
          }));
    }

    /** What the server's attempt asks for, and the behaviour it leads to. */
    private final class ServerSteps implements AcceptAttempt.AcceptSteps {
      private byte[] privateData;
      private Behavior<Command> next;

      Behavior<Command> decided() {
        Behavior<Command> b = next;
        next = null;
        return b != null ? b : Behaviors.same();
      }

      @Override
      public void deadlineIn(Duration after) {
        timers.startSingleTimer(SERVER_TIMER, new Timeout("server"), after);
      }

      @Override
      public void accept() {
        id.accept(ConnectionParameters.withPrivateData(privateData));
        phase = Phase.ACCEPTING;
      }

      @Override
      public void reject(byte[] privateData, String why) {
        if (why != null) ctx.getLog().warn("the request from {}: {}; rejecting it", remote, why);
        told = true; // the handler has not taken the connection: nobody else to tell
        try {
          id.reject(privateData);
        } catch (RuntimeException e) {
          ctx.getLog().debug("rejecting {} failed: {}", id, e.getMessage());
        }
        next = Behaviors.stopped();
      }

      @Override
      public void established(CmEvent event) {
        next = ConnectionActor.State.this.established(event);
      }

      @Override
      public void failed(ConnectAttempt.Failure why) {
        next = failAttempt(why.reason());
      }
    }

    // -------------------------------------------------------------- both sides

    private Behavior<Command> established(CmEvent ev) {
      timers.cancelAll();
      phase = Phase.ESTABLISHED;
      qp.tell(new QpActor.Sync("ESTABLISHED"));
      if (handler != null) {
        handler.tell(new Connected(ctx.getSelf(), qp, pool, ev.privateData(), id.localAddress(),
            remote));
      }
      if (spec.active()) spec.connector().tell(new Established(ctx.getSelf(), ev));
      return done(receive()
          .onMessage(Disconnect.class, d -> disconnect())
          .onMessage(CmEventArrived.class, e -> eventWhileConnected(e.event())));
    }

    private Behavior<Command> disconnect() {
      try {
        id.disconnect();
      } catch (RuntimeException e) {
        ctx.getLog().debug("rdma_disconnect on {} failed: {}", id, e.getMessage());
        return ended(Ending.DISCONNECTED_HERE, "rdma_disconnect failed: " + e.getMessage());
      }
      phase = Phase.DISCONNECTING;
      timers.startSingleTimer(new Timeout("disconnect"), settings.disconnectTimeout);
      return done(receive()
          .onMessage(Disconnect.class, d -> Behaviors.same())
          .onMessage(CmEventArrived.class, e -> eventWhileConnected(e.event()))
          .onMessage(Timeout.class, t -> ended(Ending.DISCONNECTED_HERE, "no DISCONNECTED within "
              + settings.disconnectTimeout)));
    }

    private Behavior<Command> eventWhileConnected(CmEvent e) {
      switch (e.type()) {
        case DISCONNECTED:
          return ended(phase != Phase.DISCONNECTING ? Ending.DISCONNECTED_BY_PEER
              : Ending.DISCONNECTED_HERE, "DISCONNECTED");
        case DEVICE_REMOVAL:
          return ended(Ending.LOST, "DEVICE_REMOVAL");
        default:
          ctx.getLog().debug("{} on established {}", e, id);
          return Behaviors.same();
      }
    }

    /**
     * The end of an established connection. The QP actor first reports the completion of every
     * request (a receive the peer filled before it disconnected is data, not a flush) and stops;
     * then the handler and connector hear of the end, and this actor stops. A QP whose
     * completions do not come within {@code disconnect-timeout} is stopped with the rest
     * reported flushed.
     */
    private Behavior<Command> ended(Ending ending, String reason) {
      boolean lost = ending == Ending.LOST;
      timers.cancelAll();
      // what the id says from now on (TIMEWAIT_EXIT, after a pause) is nobody's: no dead letter
      spec.router().disown(id);
      qp.tell(new QpActor.Finish(reason));
      timers.startSingleTimer(new Timeout("finish"), settings.disconnectTimeout);
      Runnable tell = () -> {
        told = true;
        if (handler != null) {
          handler.tell(lost ? new ConnectionLost(ctx.getSelf(), reason)
              : new Disconnected(ctx.getSelf(), ending == Ending.DISCONNECTED_BY_PEER));
        }
        if (spec.active()) spec.connector().tell(new Ended(reason, lost));
      };
      return Behaviors.receive(Command.class)
          .onSignal(Terminated.class, t -> {
            tell.run();
            return Behaviors.stopped();
          })
          .onMessage(Timeout.class, t -> {
            ctx.getLog().warn("the QP of the connection with {} did not report all its "
                + "completions within {} (pekko-rdma.actors.cm.disconnect-timeout); the rest "
                + "are reported flushed", remote, settings.disconnectTimeout);
            tell.run();
            return Behaviors.stopped();
          })
          .onAnyMessage(m -> Behaviors.same())
          .onSignal(PostStop.class, s -> {
            if (!told) tell.run(); // stopped from above while the QP finished: still this end
            spec.router().destroy(id, ctx.getLog());
            return Behaviors.same();
          })
          .build();
    }

    /** Before ESTABLISHED every other event ends the attempt. */
    private Behavior<Command> unexpectedBeforeEstablished(CmEvent e) {
      switch (e.type()) {
        case REJECTED:
        case UNREACHABLE:
        case CONNECT_ERROR:
        case DEVICE_REMOVAL:
        case DISCONNECTED:
          return failAttempt(e.outcome());
        default:
          ctx.getLog().debug("{} on {} while connecting", e, id);
          return Behaviors.same();
      }
    }

    private Behavior<Command> failAttempt(String reason) {
      timers.cancelAll();
      told = true;
      if (spec.active()) {
        spec.connector().tell(new AttemptFailed(reason, true));
      } else if (handler != null) {
        handler.tell(new ConnectionLost(ctx.getSelf(), reason));
      }
      ctx.getLog().debug("connection {} failed: {}", id, reason);
      return Behaviors.stopped();
    }

    private void tellStopped() {
      String reason = "stopped with its device";
      boolean up = phase == Phase.ESTABLISHED || phase == Phase.DISCONNECTING;
      if (handler != null && (up || !spec.active())) {
        handler.tell(new ConnectionLost(ctx.getSelf(), reason));
      }
      if (spec.active()) {
        spec.connector().tell(up ? new Ended(reason, true) : new AttemptFailed(reason, true));
      }
    }

    /** Every state starts with this: a failed QP ends the connection. */
    private BehaviorBuilder<Command> receive() {
      return Behaviors.receive(Command.class)
          .onMessage(QpEventArrived.class, e -> {
            if (e.event() instanceof QpActor.Fatal f) {
              String reason = "QP failed: " + f.reason();
              return phase == Phase.ESTABLISHED || phase == Phase.DISCONNECTING
                  ? ended(Ending.LOST, reason) : failAttempt(reason);
            }
            // also while disconnecting: the owner may have asked for the disconnect because of
            // the failure (an error completion can reach it first), which is still the reason
            if (e.event() instanceof QpActor.Failed f
                && (phase == Phase.ESTABLISHED || phase == Phase.DISCONNECTING)) {
              return ended(Ending.LOST, "QP failed (" + f.status() + ") on the connection with "
                  + remote + ": " + f.reason());
            }
            return Behaviors.same();
          })
          // the QP actor stops only when told to (Finish) or when it could not make the QP
          .onSignal(Terminated.class, t -> Behaviors.same())
          .onSignal(PostStop.class, s -> {
            // stopped from above (its device failed, say) before it could say how it ended
            if (!told) tellStopped();
            // the QP actor, a child, has destroyed the QP by now
            spec.router().destroy(id, ctx.getLog());
            return Behaviors.same();
          });
    }

    /** Every state ends with this: what the state did not handle. */
    private Behavior<Command> done(BehaviorBuilder<Command> b) {
      return b
          .onMessage(Disconnect.class, d -> failAttempt("disconnected before it was established"))
          .onMessage(CmEventArrived.class, e -> unexpectedBeforeEstablished(e.event()))
          .onMessage(Accept.class, a -> Behaviors.same())
          .onMessage(Reject.class, r -> Behaviors.same())
          .onMessage(Timeout.class, t -> Behaviors.same())
          .build();
    }
  }
}
