package dev.pekkordma.cluster;

import dev.pekkordma.actors.Buffer;
import dev.pekkordma.actors.BufferPool;
import dev.pekkordma.actors.CmActor;
import dev.pekkordma.actors.ConnectionActor;
import dev.pekkordma.actors.QpActor;
import dev.pekkordma.actors.QpSpec;
import dev.pekkordma.cluster.PeerEvent.Reason;
import dev.pekkordma.verbs.WcStatus;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.util.ByteString;

/**
 * The RDMA connection with one incarnation of one member, and the messages for it. The member
 * with the lower address is the client and connects through the actors' {@link CmActor} (whose
 * connector retries); the other accepts what its listener hands over. Messages wait in a queue
 * until the connection is up, the member reachable and the peer has credit (see {@link
 * Credits}); each then completes when its SEND does. Closing fails what is queued, disconnects,
 * and waits (bounded) for the sends in flight to be flushed, so that every message is reported.
 */
final class Link {
  private Link() {}

  sealed interface Command {}

  record Send(int channel, ByteString payload, CompletableFuture<Done> promise)
      implements Command {}

  /** The member's endpoint is known and it may be connected to. */
  record Accepted(Endpoint endpoint, ActorRef<Protocol.Request> protocol) implements Command {}

  /** No connection with the member: fail what waits and what comes. */
  record Refuse(Reason reason, String detail) implements Command {}

  enum Up implements Command { INSTANCE }

  record Reachability(boolean reachable) implements Command {}

  /** A connection request of the member, for the server side to accept. */
  record Incoming(ActorRef<ConnectionActor.Command> connection) implements Command {}

  /** Lazy mode: the member has a message for this one. */
  enum Demand implements Command { INSTANCE }

  /** The member was removed (or this one is going): close, report every message, stop. */
  record Close(String reason) implements Command {}

  private record FromConnection(ConnectionActor.Event event) implements Command {}

  private record FromQp(QpActor.WorkResult result) implements Command {}

  private enum Tick implements Command { INSTANCE }

  private enum Reconnect implements Command { INSTANCE }

  private enum AskAgain implements Command { INSTANCE }

  private enum EndpointDeadline implements Command { INSTANCE }

  private enum CloseDeadline implements Command { INSTANCE }

  private enum ConnectWait implements Command { INSTANCE }

  private record FlushDeadline(int generation) implements Command {}

  /** Work of connection {@code generation} came back flushed, and this side did not ask. */
  private record Unasked(int generation) implements Command {}

  /** What a link is made with. */
  record LinkSpec(UniqueAddress self, UniqueAddress peer, boolean client, ClusterSettings settings,
      int bufferSize, Duration disconnectTimeout, ActorRef<CmActor.Command> cm,
      ActorRef<Coordinator.Command> coordinator, Channels channels) {}

  static Behavior<Command> create(LinkSpec spec) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(t -> new State(ctx, t, spec).behavior()));
  }

  private static final class State {
    private static final Duration TICK = Duration.ofMillis(2);
    private static final Duration ASK_AGAIN = Duration.ofSeconds(2);
    /** How long the CM has to say the peer disconnected, before a flush means a broken QP. */
    private static final Duration UNASKED = Duration.ofMillis(500);
    private final ActorContext<Command> ctx;
    private final TimerScheduler<Command> timers;
    private final LinkSpec spec;
    private final ClusterSettings settings;
    private final Address member;
    private final QpSpec qpSpec;
    private final ActorRef<ConnectionActor.Event> connectionEvents;
    private final ActorRef<QpActor.WorkResult> results;
    private final Inbound inbound;
    private final ArrayDeque<Send> queue = new ArrayDeque<>();
    /** Data sends posted and not completed, by work request id. */
    private final Map<Long, QueuedSend> inflight = new HashMap<>();
    /** Credit frames and receives posted, by id, with their connection's generation. */
    private final Map<Long, Integer> credits = new HashMap<>();
    private final Map<Long, Integer> receives = new HashMap<>();

    private Endpoint endpoint;
    private ActorRef<Protocol.Request> protocol;
    private boolean up;
    private boolean reachable = true;
    private boolean demanded;
    private boolean askedToConnect;
    /** The coordinator's refusal (conflict, incompatible): sends fail with it. */
    private String refusal;
    /** This link's own giving up (no answer, rejected): cleared when the member is reachable. */
    private String failure;
    /** The member broke the wire protocol: no connection with it until it is reachable again. */
    private boolean violated;
    private String closing;

    // the connection, when there is one
    private ConnectionActor.Connected connection;
    private boolean connecting;
    private int generation;
    /** The connection this side asked to end. */
    private int asked;
    private Credits flow;
    private int sendsOutstanding;
    private int frameLimit;
    private long nextId = 1;
    private int rejections;
    private int reconnects;
    /** When connecting to the reachable member first failed (0: it has not). */
    private long unansweredSince;

    private record QueuedSend(Send send, int generation) {}

    State(ActorContext<Command> ctx, TimerScheduler<Command> timers, LinkSpec spec) {
      this.ctx = ctx;
      this.timers = timers;
      this.spec = spec;
      this.settings = spec.settings();
      this.member = spec.peer().address();
      this.qpSpec = LinkQp.spec(settings);
      this.connectionEvents = ctx.messageAdapter(ConnectionActor.Event.class, FromConnection::new);
      this.results = ctx.messageAdapter(QpActor.WorkResult.class, FromQp::new);
      this.inbound = new Inbound(member, spec.channels(), ctx.getLog());
      this.demanded = settings.connect == ClusterSettings.Connect.EAGER;
    }

    Behavior<Command> behavior() {
      return Behaviors.receive(Command.class)
          .onMessage(Send.class, this::send)
          .onMessage(Accepted.class, a -> {
            endpoint = a.endpoint();
            protocol = a.protocol();
            refusal = null;
            timers.cancel(EndpointDeadline.INSTANCE);
            return progress();
          })
          .onMessage(Refuse.class, r -> {
            refusal = r.detail();
            failQueue(refusal);
            disconnect();
            return Behaviors.same();
          })
          .onMessageEquals(Up.INSTANCE, () -> {
            up = true;
            return progress();
          })
          .onMessage(Reachability.class, r -> {
            reachable = r.reachable();
            if (reachable && failure != null) {
              ctx.getLog().info("{} is reachable again: trying its RDMA endpoint again", member);
              failure = null;
              violated = false;
              rejections = 0;
            }
            unansweredSince = 0;
            return progress();
          })
          .onMessageEquals(Demand.INSTANCE, () -> {
            demanded = true;
            return progress();
          })
          .onMessage(Incoming.class, this::incoming)
          .onMessage(FromConnection.class, e -> connectionEvent(e.event()))
          .onMessage(FromQp.class, r -> work(r.result()))
          .onMessageEquals(Tick.INSTANCE, this::progress)
          .onMessageEquals(Reconnect.INSTANCE, this::progress)
          .onMessageEquals(AskAgain.INSTANCE, () -> {
            askedToConnect = false;
            return progress();
          })
          .onMessageEquals(EndpointDeadline.INSTANCE, () -> {
            if (endpoint == null && refusal == null) {
              failQueue(member + " has advertised no RDMA endpoint within "
                  + ClusterSettings.show(settings.endpointTimeout) + " (does it run RdmaCluster?)");
            }
            return Behaviors.same();
          })
          .onMessage(Unasked.class, u -> {
            if (connection == null || u.generation() != generation || asked == generation) {
              return Behaviors.same();
            }
            ctx.getLog().warn("the RDMA connection with {} failed: {}; disconnecting", member,
                Inbound.unasked(connection.pool().bufferSize()));
            disconnect();
            return Behaviors.same();
          })
          .onMessage(FlushDeadline.class, f -> {
            failInflight(f.generation(), "it was in flight when the connection to " + member
                + " ended, and no completion came within "
                + ClusterSettings.show(settings.flushTimeout) + ": its delivery is not known");
            return done();
          })
          .onMessageEquals(ConnectWait.INSTANCE, () -> {
            if (connection == null && closing == null && refusal == null && failure == null) {
              giveUp(Reason.NO_ANSWER, member + " did not connect to this member's RDMA endpoint "
                  + "within " + ClusterSettings.show(settings.connectWait) + " ("
                  + ClusterSettings.ROOT + ".connect-wait)");
            }
            return Behaviors.same();
          })
          .onMessage(Close.class, c -> close(c.reason()))
          .onMessageEquals(CloseDeadline.INSTANCE, () -> {
            ctx.getLog().warn("closing the link to {}: the connection did not end in time", member);
            return Behaviors.stopped();
          })
          .onSignal(PostStop.class, s -> {
            String why = closing != null ? closing : "the link to " + member + " stopped";
            failQueue(why);
            failInflight(-1, why);
            disconnect();
            return Behaviors.same();
          })
          .build();
    }

    // -------------------------------------------------------------- messages in

    private Behavior<Command> send(Send s) {
      String why = closing != null ? closing : refusal != null ? refusal : failure;
      int limit = frameLimit() - Frames.HEADER;
      if (why != null) {
        fail(s, why);
      } else if (s.payload().size() > limit) {
        fail(s, "a message of " + s.payload().size() + " bytes is larger than the " + limit
            + " a frame to it carries");
      } else if (queue.size() >= settings.maxQueuedSends) {
        fail(s, queue.size() + " messages are queued for it already ("
            + ClusterSettings.ROOT + ".max-queued-sends)"
            + (reachable ? "" : "; it is unreachable"));
      } else {
        queue.add(s);
        demanded = true;
        if (endpoint == null && !timers.isTimerActive(EndpointDeadline.INSTANCE)) {
          timers.startSingleTimer(EndpointDeadline.INSTANCE, settings.endpointTimeout);
        }
      }
      return progress();
    }

    private int frameLimit() {
      int ours = connection != null ? connection.pool().bufferSize() : spec.bufferSize();
      return endpoint == null ? ours : Math.min(ours, endpoint.maxMessage());
    }

    private Behavior<Command> incoming(Incoming in) {
      String why = closing != null ? closing
          : refusal != null ? refusal : violated ? failure : null;
      if (why != null) {
        in.connection().tell(new ConnectionActor.Reject(ConnectPrivateData.rejection(why)));
        return Behaviors.same();
      }
      if (connection != null) {
        // the peer lost its side and connects again: ours is stale
        ctx.getLog().info("{} connects again; its previous RDMA connection goes", member);
        ActorRef<ConnectionActor.Command> old = connection.connection();
        ended("replaced by a new connection from the peer");
        old.tell(ConnectionActor.Disconnect.INSTANCE);
      }
      in.connection().tell(new ConnectionActor.Accept(ConnectPrivateData.of(spec.self().longUid()),
          connectionEvents));
      return Behaviors.same();
    }

    private Behavior<Command> connectionEvent(ConnectionActor.Event e) {
      if (e instanceof ConnectionActor.Connected c) {
        connecting = false;
        if (closing != null || refusal != null || violated || (connection != null
            && !connection.connection().equals(c.connection()))) {
          c.connection().tell(ConnectionActor.Disconnect.INSTANCE);
          return Behaviors.same();
        }
        return connected(c);
      }
      if (e instanceof ConnectionActor.Reconnecting r) {
        ctx.getLog().debug("connecting to {} again (attempt {}) in {}: {}", member, r.attempt(),
            r.delay(), r.reason());
        return Behaviors.same();
      }
      if (e instanceof ConnectionActor.ConnectFailed f) {
        connecting = false;
        if (!reachable) {
          ctx.getLog().info("no RDMA connection to unreachable {} ({}); trying again once it is "
              + "reachable", member, f.reason());
          return done();
        }
        // a member that just died looks the same until the cluster notices: give it a while
        long now = System.nanoTime();
        if (unansweredSince == 0) unansweredSince = now;
        if (now - unansweredSince < settings.connectWait.toNanos()) {
          ctx.getLog().info("{}'s RDMA endpoint {} does not answer ({}); trying again",
              member, f.remote(), f.reason());
          reconnectLater();
        } else {
          giveUp(Reason.NO_ANSWER, member + "'s RDMA endpoint " + f.remote() + " has not "
              + "answered for " + ClusterSettings.show(settings.connectWait) + " while the member "
              + "is reachable (" + ClusterSettings.ROOT + ".connect-wait); last: " + f.reason());
        }
        return done();
      }
      if (e instanceof ConnectionActor.Rejected r) {
        connecting = false;
        String why = Untrusted.text(r.privateData());
        if (++rejections >= settings.maxRejections) {
          giveUp(Reason.REJECTED, member + " rejected " + rejections + " RDMA connections in a "
              + "row; last: " + why);
        } else {
          ctx.getLog().info("{} rejected the RDMA connection ({}); trying again", member, why);
          reconnectLater();
        }
        return done();
      }
      if (e instanceof ConnectionActor.Disconnected d) {
        if (connection == null || !connection.connection().equals(d.connection())) {
          return Behaviors.same();
        }
        ended(d.byPeer() ? "disconnected by the peer" : "disconnected");
        if (spec.client()) reconnectLater(); // the connector has stopped: a disconnect is final
        return done();
      }
      if (e instanceof ConnectionActor.ConnectionLost l) {
        if (connection == null || !connection.connection().equals(l.connection())) {
          ctx.getLog().debug("a connection attempt of {} failed: {}", member, l.reason());
          return Behaviors.same();
        }
        ended("connection lost: " + l.reason());
        // a client's connector connects again by itself
        if (spec.client() && closing == null) connecting = true;
        return done();
      }
      return Behaviors.same();
    }

    // -------------------------------------------------------------- the connection

    private Behavior<Command> progress() {
      if (connection == null) {
        connect();
      } else {
        pump();
      }
      return done();
    }

    private void connect() {
      if (closing != null || refusal != null || failure != null || endpoint == null
          || connection != null || connecting || !up || !reachable || !demanded) {
        return;
      }
      if (!spec.client()) {
        // the lower address connects; in lazy mode tell it there is something to send
        boolean lazy = settings.connect == ClusterSettings.Connect.LAZY;
        if (lazy && !queue.isEmpty() && !askedToConnect && protocol != null) {
          protocol.tell(new Protocol.ConnectToMe(spec.self().longUid()));
          askedToConnect = true;
          timers.startSingleTimer(AskAgain.INSTANCE, ASK_AGAIN);
        }
        if ((!lazy || askedToConnect) && !timers.isTimerActive(ConnectWait.INSTANCE)) {
          timers.startSingleTimer(ConnectWait.INSTANCE, settings.connectWait);
        }
        return;
      }
      if (timers.isTimerActive(Reconnect.INSTANCE)) return;
      connecting = true;
      ctx.getLog().debug("connecting to {} at {}", member, endpoint.cmAddress());
      spec.cm().tell(new CmActor.Connect(new InetSocketAddress(endpoint.host(), endpoint.port()),
          ConnectPrivateData.of(spec.self().longUid()), qpSpec, connectionEvents));
    }

    private Behavior<Command> connected(ConnectionActor.Connected c) {
      generation++;
      connection = c;
      rejections = 0;
      reconnects = 0;
      unansweredSince = 0;
      askedToConnect = false;
      timers.cancel(Reconnect.INSTANCE);
      timers.cancel(ConnectWait.INSTANCE);
      BufferPool pool = c.pool();
      frameLimit = frameLimit();
      List<QpActor.Work> posts = new ArrayList<>();
      for (int i = 0; i < settings.receiveDepth; i++) {
        Buffer b = pool.tryLease();
        if (b == null) break;
        posts.add(receive(b));
      }
      if (posts.size() < 2) {
        for (QpActor.Work w : posts) {
          receives.remove(w.id());
          w.buffer().release();
        }
        ctx.getLog().error("no RDMA connection with {}: the connections' buffer pool has {} of {} "
            + "buffers free, and a connection needs at least 2 for receives (raise "
            + "pekko-rdma.actors.buffer-pool.slabs, or lower {}.receive-depth)", member,
            pool.available(), pool.capacity(), ClusterSettings.ROOT);
        flow = null;
        c.connection().tell(ConnectionActor.Disconnect.INSTANCE);
        return Behaviors.same();
      }
      c.qp().tell(LinkQp.sendAndReceiveOnly(ctx.getSystem().ignoreRef()));
      c.qp().tell(new QpActor.Post(posts, results));
      flow = new Credits(posts.size());
      inbound.connected();
      sendsOutstanding = 0;
      ctx.getLog().info("RDMA connection with {} ({}) up: {} receives posted, frames up to {} B",
          member, endpoint.cmAddress(), posts.size(), frameLimit);
      report(new PeerEvent.Connected(member, endpoint));
      pump();
      return Behaviors.same();
    }

    private QpActor.Work receive(Buffer b) {
      long id = nextId++;
      receives.put(id, generation);
      return new QpActor.Receive(id, b);
    }

    /** Posts what the credits, the queue depth and the pool allow: data, then a credit frame. */
    private void pump() {
      if (connection == null || flow == null) return;
      BufferPool pool = connection.pool();
      List<QpActor.Work> posts = new ArrayList<>();
      while (reachable && !queue.isEmpty() && flow.canSendData()
          && sendsOutstanding < qpSpec.maxSendWr()) {
        Send s = queue.peek();
        if (s.promise().isDone()) { // completed by its caller (a timeout, say): not sent
          queue.poll();
          continue;
        }
        if (Frames.HEADER + s.payload().size() > frameLimit) {
          queue.poll();
          fail(s, "a message of " + s.payload().size() + " bytes is larger than the "
              + (frameLimit - Frames.HEADER) + " a frame to it carries");
          continue;
        }
        Buffer b = pool.tryLease();
        if (b == null) {
          retrySoon();
          break;
        }
        queue.poll();
        int length = Frames.writeData(b, flow.take(), s.channel(), s.payload());
        long id = nextId++;
        inflight.put(id, new QueuedSend(s, generation));
        posts.add(new QpActor.Send(id, b, length));
        sendsOutstanding++;
      }
      if (flow.shouldSendCredit() && sendsOutstanding < qpSpec.maxSendWr()) {
        Buffer b = pool.tryLease();
        if (b == null) {
          retrySoon();
        } else {
          int length = Frames.writeCredit(b, flow.take());
          long id = nextId++;
          credits.put(id, generation);
          posts.add(new QpActor.Send(id, b, length));
          sendsOutstanding++;
        }
      }
      if (!posts.isEmpty()) connection.qp().tell(new QpActor.Post(posts, results));
    }

    private void retrySoon() {
      if (!timers.isTimerActive(Tick.INSTANCE)) timers.startSingleTimer(Tick.INSTANCE, TICK);
    }

    private Behavior<Command> work(QpActor.WorkResult r) {
      if (r instanceof QpActor.PostRejected rej) {
        // does not happen while the QP is in RTS and within its queues; the buffers of a
        // rejected post may still be the QP actor's, so they are left to it
        ctx.getLog().error("the QP of the connection with {} rejected work: {}", member, rej.why());
        for (long id : rej.ids()) {
          QueuedSend p = inflight.remove(id);
          if (p != null) fail(p.send(), "its post was rejected: " + rej.why());
          credits.remove(id);
          receives.remove(id);
        }
        disconnect();
        return done();
      }
      List<QpActor.Work> reposts = new ArrayList<>();
      String broken = null;
      for (QpActor.Completion c : ((QpActor.Completed) r).completions()) {
        QueuedSend p = inflight.remove(c.id());
        if (p != null) {
          if (p.generation() == generation) sendsOutstanding--;
          if (c.ok()) {
            p.send().promise().complete(Done.getInstance());
          } else {
            fail(p.send(), "its SEND completed with " + c.status());
            if (broken == null) broken = broke(c, p.generation());
          }
          continue;
        }
        Integer g = credits.remove(c.id());
        if (g != null) {
          if (g == generation) sendsOutstanding--;
          if (broken == null) broken = broke(c, g);
          continue;
        }
        g = receives.remove(c.id());
        if (g == null) {
          if (c.buffer() != null) c.buffer().release();
          continue;
        }
        if (!c.ok()) { // flushed, or failed: its buffer went back with it
          String what = g != generation || flow == null ? null
              : Inbound.failedReceive(c.status(), connection.pool().bufferSize());
          if (what != null) violated(what); else if (broken == null) broken = broke(c, g);
          continue;
        }
        if (g != generation || connection == null || flow == null) {
          c.buffer().release();
          continue;
        }
        try {
          inbound.accept(c.buffer().view(0, c.buffer().capacity()), c.byteLength(), flow);
        } catch (ProtocolViolation v) {
          violated(v.getMessage());
        }
        if (flow == null) c.buffer().release(); else reposts.add(receive(c.buffer()));
      }
      if (connection != null && flow != null) {
        if (!reposts.isEmpty()) {
          connection.qp().tell(new QpActor.Post(reposts, results));
          flow.reposted(reposts.size());
        }
        if (broken != null) {
          // the QP is in ERR: nothing more passes; a new connection must
          ctx.getLog().warn("the RDMA connection with {} failed ({}); disconnecting", member,
              broken);
          disconnect();
        } else {
          pump();
        }
      } else {
        for (QpActor.Work w : reposts) {
          receives.remove(w.id());
          w.buffer().release();
        }
      }
      return done();
    }

    /**
     * Why a completion says the current connection's QP failed, or null. A flush unasked may be
     * the peer's disconnect, which the CM is about to report; if not, see {@link Inbound#unasked}.
     */
    private String broke(QpActor.Completion c, int g) {
      if (c.ok() || g != generation || connection == null) return null;
      if (c.status() != WcStatus.WR_FLUSH_ERR) return "a completion with " + c.status();
      if (asked != generation) timers.startSingleTimer(Unasked.class, new Unasked(g), UNASKED);
      return null;
    }

    /** The peer broke the wire protocol: nothing more of this connection is taken; refused. */
    private void violated(String what) {
      flow = null;
      violated = true;
      giveUp(Reason.PROTOCOL_VIOLATION, member + " broke the RDMA wire protocol: " + what);
      disconnect();
    }

    /** The connection is gone: what was in flight on it waits (bounded) for its flush. */
    private void ended(String reason) {
      int g = generation;
      connection = null;
      flow = null;
      ctx.getLog().info("RDMA connection with {} ended: {}", member, reason);
      report(new PeerEvent.Disconnected(member, reason));
      boolean waiting = inflight.values().stream().anyMatch(p -> p.generation() == g);
      if (waiting) timers.startSingleTimer(new FlushDeadline(g), settings.flushTimeout);
    }

    private void disconnect() {
      if (connection == null) return;
      asked = generation;
      connection.connection().tell(ConnectionActor.Disconnect.INSTANCE);
    }

    private void reconnectLater() {
      if (closing != null || refusal != null || failure != null) return;
      Duration delay = settings.reconnectBackoff.delay(++reconnects);
      timers.startSingleTimer(Reconnect.INSTANCE, delay);
    }

    private void giveUp(Reason reason, String detail) {
      failure = detail;
      ctx.getLog().error("{}; messages to it fail until it is reachable again", detail);
      failQueue(detail);
      report(new PeerEvent.Refused(member, reason, detail));
    }

    private Behavior<Command> close(String reason) {
      if (closing != null) return Behaviors.same();
      closing = reason;
      failQueue(reason);
      disconnect();
      timers.startSingleTimer(CloseDeadline.INSTANCE,
          spec.disconnectTimeout().plus(settings.flushTimeout));
      return done();
    }

    /**
     * A closing link stops once its connection ended and every request it posted is reported:
     * the sends, and the credit frames and receives the QP flushes as it goes (so that no flush
     * reaches a stopped link as a dead letter; the close deadline bounds the wait).
     */
    private Behavior<Command> done() {
      if (closing != null && connection == null && inflight.isEmpty() && credits.isEmpty()
          && receives.isEmpty()) {
        return Behaviors.stopped();
      }
      return Behaviors.same();
    }

    // -------------------------------------------------------------- reporting

    private void report(PeerEvent e) {
      spec.coordinator().tell(new Coordinator.Report(spec.peer(), e));
    }

    private void fail(Send s, String why) {
      s.promise().completeExceptionally(new SendFailedException(member, why));
    }

    private void failQueue(String why) {
      for (Send s : queue) fail(s, why);
      queue.clear();
    }

    /** Fails the sends in flight on connection {@code g} (all when -1). */
    private void failInflight(int g, String why) {
      for (Iterator<QueuedSend> it = inflight.values().iterator(); it.hasNext(); ) {
        QueuedSend p = it.next();
        if (g == -1 || p.generation() == g) {
          fail(p.send(), why);
          it.remove();
        }
      }
    }
  }
}
