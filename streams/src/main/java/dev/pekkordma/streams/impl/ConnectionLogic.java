package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.streams.BulkChunk;
import dev.pekkordma.streams.RdmaStreamException;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.TransferResult;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntSupplier;
import org.apache.pekko.Done;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SubscriptionWithCancelException;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running half of a {@link ConnectionStage}: the connection's life on the stage's own
 * thread. It posts, polls its CQ when the completion hub wakes it, and reacts to the CM events
 * the CM dispatcher hands it. Its bookkeeping is in {@link Sender}, {@link Receiver} and {@link
 * CloseHandshake}; what it opens, in {@link ConnectionResources}.
 */
final class ConnectionLogic extends TimerGraphStageLogic {
  private static final Logger log = LoggerFactory.getLogger(ConnectionStage.class);
  private static final Duration FLUSH_GRACE = Duration.ofMillis(300);

  private enum Phase {
    LISTENING, RESOLVING_HOST, RESOLVING_ADDRESS, RESOLVING_ROUTE, CONNECTING, RUNNING
  }

  private final StreamsRuntime rt;
  private final RdmaStreamSettings settings;
  private final boolean halfClose;
  private final boolean keepBoundaries;
  private final boolean lend;
  private final ConnectionStage.Role role;
  private final Inlet<Object> in;
  private final Outlet<Object> out;
  private final ConnectionStage.Mat mat;
  private InetSocketAddress remote;
  private CmId listener;
  private final CompletableFuture<Done> unbound = new CompletableFuture<>();
  private final ConnectionPlan plan;
  private final RingSizing sizing; // null: the ring stays as it is
  private final RingSizing.Plan first; // the ring a connection starts with
  private RingExchange rings;
  private boolean ticking; // the resize timer runs
  private final int slotSize;
  private final int sqDepth;
  private final int rqDepth;
  private final ProtocolValidator rules;
  private Phase phase = Phase.RESOLVING_ADDRESS;
  private CmId id;
  private ConnectionResources res; // with the id; opened by setUp
  private EarlyAccept adopted; // what the binding accepted, when it did
  private Sender sender;
  private Receiver receiver;
  private ElementWriter writer;
  private ControlMessages controls;
  private IntSupplier credits; // what each write carries
  private StreamsMeter.Connection meter; // once running
  private boolean established;
  private boolean disconnected;
  private boolean tornDown;
  private boolean upstreamDone;
  private boolean outDone;
  private final CloseHandshake close = new CloseHandshake();

  private String flushReason;
  private Throwable cause;
  private boolean downstreamCancelled;
  private boolean peerClosed; // gracefully, and went while our writing side was still open

  private AsyncCallback<CmEvent> cmEvents;
  private AsyncCallback<RuntimeException> cmStopped;
  private InetSocketAddress bound; // the listener's address, once bound
  private AsyncCallback<Boolean> wake;
  private AsyncCallback<Boolean> burstEnd;
  private boolean burstEndDue;

  ConnectionLogic(ConnectionStage stage, ConnectionStage.Mat mat) {
    super(stage.shape());
    this.rt = stage.rt;
    this.settings = stage.settings;
    this.halfClose = stage.halfClose;
    this.keepBoundaries = stage.keepBoundaries;
    this.lend = stage.lend;
    this.role = stage.role;
    this.in = stage.in;
    this.out = stage.out;
    this.mat = mat;
    this.remote = role instanceof ConnectionStage.Role.Outgoing o ? o.remote()
        : role instanceof ConnectionStage.Role.Incoming i ? i.request().remote() : null;
    this.plan = ConnectionPlan.of(rt, settings, keepBoundaries, lend);
    this.slotSize = plan.slotSize();
    this.sizing = plan.sizing();
    this.first = plan.first();
    this.sqDepth = plan.sqDepth();
    this.rqDepth = plan.rqDepth();
    this.rules = new ProtocolValidator(first.count(), first.size(),
        keepBoundaries ? settings.maxMessageSize() : Long.MAX_VALUE,
        settings.path() + ".max-message-size");
    if (plan.takesBatches()) rules.takeBatches();
    setHandler(in, new AbstractInHandler() {
      @Override
      public void onPush() {
        onElement(grab(in));
      }

      @Override
      public void onUpstreamFinish() {
        upstreamDone = true;
        if (peerClosed) finish();
        progress();
      }

      @Override
      public void onUpstreamFailure(Throwable ex) {
        // an abort, as Tcp's: no FIN, the peer's stream fails
        fail(IdleTimeout.named(ex, settings, peer()));
      }
    });
    setHandler(out, new AbstractOutHandler() {
      @Override
      public void onPull() {
        progress();
      }

      @Override
      public void onDownstreamFinish(Throwable cause) {
        outDone = true;
        downstreamCancelled = true;
        if (!(cause instanceof SubscriptionWithCancelException.NonFailureCancellation)) {
          fail(IdleTimeout.named(cause, settings, peer()));
          return;
        }
        // our application stopped reading before the peer's end: the peer hears it (CANCEL),
        // and fails if anything it wrote was dropped, and once it has, any element after; as
        // Tcp's, our writing side goes on (an element on its way, then its completion)
        if (receiver != null) receiver.discarding = true;
        close.stopReading(receiver == null ? 0 : receiver.arrivals.size(),
            receiver != null && receiver.partial(), receiver == null ? 0 : receiver.takenWhole());
        progress();
      }
    });
  }

  private boolean active() {
    return role instanceof ConnectionStage.Role.Outgoing;
  }

  private String peerName() {
    return remote == null ? "the client at " + RdmaStreamException.format(peer())
        : RdmaStreamException.format(remote);
  }

  private RdmaStreamException failure(String reason) {
    return remote == null ? new RdmaStreamException("listening on", peer(), reason)
        : new RdmaStreamException("RDMA connection to", remote, reason);
  }

  /** The peer, or where a listener awaits its one client (once bound, with the port picked). */
  private InetSocketAddress peer() {
    return remote != null ? remote
        : bound != null ? bound : ((ConnectionStage.Role.ListenOnce) role).address();
  }

  // ------------------------------------------------------------ connecting

  @Override
  public void preStart() {
    // both ports closed is not the end: the close handshake and the teardown come after
    setKeepGoing(true);
    cmEvents = createAsyncCallback(this::onCmEvent);
    cmStopped = createAsyncCallback(this::onCmStopped);
    wake = createAsyncCallback(x -> drainCq());
    burstEnd = createAsyncCallback(x -> {
      burstEndDue = false;
      writer.burstOver();
      progress();
    });
    if (active() && remote.isUnresolved()) { // as Tcp's: resolved first
      phase = Phase.RESOLVING_HOST;
      scheduleOnce("connect", settings.connectTimeout());
      AsyncCallback<Object> resolved = createAsyncCallback(this::onResolved);
      HostResolver.resolve(rt.system, remote).whenComplete((address, failure) ->
          resolved.invoke(failure != null ? failure : address));
      return;
    }
    start();
  }

  /** The remote host's address (an InetSocketAddress), or why there is none. */
  private void onResolved(Object result) {
    if (stopped() || phase != Phase.RESOLVING_HOST) return;
    if (result instanceof InetSocketAddress address) {
      remote = address;
      start();
      return;
    }
    Throwable why = result instanceof java.util.concurrent.CompletionException c
        && c.getCause() != null ? c.getCause() : (Throwable) result;
    fail(new RdmaStreamException("RDMA connection to", remote, "unknown host ("
        + why.getClass().getSimpleName() + ": " + why.getMessage() + ")", why));
  }

  private void start() {
    try {
      if (role instanceof ConnectionStage.Role.ListenOnce once) {
        InetSocketAddress listenAt = once.address();
        phase = Phase.LISTENING;
        listener = rt.createId("listener " + listenAt, cmEvents, cmStopped);
        listener.bind(listenAt);
        listener.listen(1);
        bound = listener.localAddress();
        AsyncCallback<Done> unbind = createAsyncCallback(d -> {
          if (phase == Phase.LISTENING) completeStage();
        });
        mat.binding().complete(TcpHandles.binding(bound, () -> {
          unbind.invoke(Done.getInstance());
          return unbound;
        }, unbound));
        return;
      }
      if (phase != Phase.RESOLVING_HOST) scheduleOnce("connect", settings.connectTimeout());
      phase = Phase.RESOLVING_ADDRESS;
      if (active()) {
        id = rt.createId("stream to " + peerName(), cmEvents, cmStopped);
        res = plan.resources(rt, id); // what it opens goes with the id
        id.resolveAddress(((ConnectionStage.Role.Outgoing) role).local(), remote,
            settings.connectTimeout());
      } else {
        ConnectionStage.Passive passive = ((ConnectionStage.Role.Incoming) role).request();
        adopt(passive.accepted(), passive.acceptTimeoutSetting());
      }
    } catch (RuntimeException e) {
      String doing = role instanceof ConnectionStage.Role.ListenOnce ? "binding: "
          : active() ? "connecting: " : "accepting: ";
      fail(RdmaStreamException.bindFailure(failure(doing + e.getMessage()), e));
    }
  }

  private void onCmEvent(CmEvent e) {
    if (tornDown) return;
    try {
      if (e.type() == CmEventType.CONNECT_REQUEST) {
        if (phase != Phase.LISTENING) {
          rt.cm().destroy(e.id(), true); // one client only
          return;
        }
        unlisten();
        remote = e.id().remoteAddress();
        scheduleOnce("connect", settings.connectTimeout());
        adopt(EarlyAccept.accept(rt, e, plan), null);
        return;
      }
      if (e.id() == listener && listener != null) {
        if (e.type() == CmEventType.DEVICE_REMOVAL) {
          fail(failure("the RDMA device was removed (DEVICE_REMOVAL)"));
        }
        return;
      }
      switch (e.type()) {
        case ADDR_RESOLVED:
          if (phase != Phase.RESOLVING_ADDRESS) break;
          phase = Phase.RESOLVING_ROUTE;
          id.resolveRoute(settings.connectTimeout());
          setUp(); // the address names the device: its QP opens while the route resolves
          return;
        case ROUTE_RESOLVED:
          if (phase != Phase.RESOLVING_ROUTE) break;
          phase = Phase.CONNECTING;
          id.connect(ConnectionParameters.withPrivateData(
              res.ring.describe(res.ringFlags).encode()));
          return;
        case ESTABLISHED:
          if (phase != Phase.CONNECTING) break;
          if (active()) usePeerRing(Wire.Ring.decode(e.privateData()));
          running();
          return;
        case DISCONNECTED:
          disconnected = true;
          if (phase == Phase.RUNNING) {
            peerGone("the peer disconnected");
          } else {
            fail(failure("connecting: DISCONNECTED"));
          }
          return;
        case DEVICE_REMOVAL:
          fail(failure("the RDMA device was removed (DEVICE_REMOVAL)"));
          return;
        case TIMEWAIT_EXIT:
          return;
        default:
          if (phase != Phase.RUNNING) {
            drainCq(); // a QP the peer broke first: its completion says so better than the CM
            if (!stopped()) fail(failure(doing() + CompletionFailure.connecting(e,
                role instanceof ConnectionStage.Role.Outgoing o ? o.local() : null)));
          }
      }
    } catch (RuntimeException ex) {
      fail(failure(doing() + e.type() + ": " + ex.getMessage()));
    }
  }

  /** No CM event will come again: what waits for one fails; a running connection goes on. */
  private void onCmStopped(RuntimeException why) {
    if (tornDown) return;
    if (phase == Phase.RUNNING) {
      log.warn("{}: CM events stopped ({}); the connection goes on, but the peer's going will"
          + " show only when a request to it fails", peerName(), why.getMessage());
      return;
    }
    fail(failure((phase == Phase.LISTENING ? "" : doing()) + "the CM event reader stopped: "
        + why.getMessage()));
  }

  /** What a failure was doing: "connecting: ", "accepting: ", or nothing once running. */
  private String doing() {
    return phase == Phase.RUNNING ? "" : active() ? "connecting: " : "accepting: ";
  }

  private void usePeerRing(Wire.Ring peer) {
    rules.peerRing(peer);
    sender.peerRing(peer);
  }

  /** The QP and everything it uses, registered once for the connection's life. */
  private void setUp() {
    res.open(() -> wake.invoke(Boolean.TRUE), peerName());
    dataPath();
    repost();
    res.cq.requestNotify(false);
  }

  /** What posts and reads on the connection's QP, once its resources are open. */
  private void dataPath() {
    sender = new Sender(res.qp, res.sendWr, sqDepth, settings.signalEvery(), res.send);
    writer = new ElementWriter(sender, res.inlineMax, res.scratch, slotSize, res.send,
        rt.coalesceWrites);
    receiver = new Receiver(res.ring.slots(), rqDepth, keepBoundaries, res::closeRing);
    receiver.maxMessage(settings.maxMessageSize(), settings.path() + ".max-message-size");
    rings = new RingExchange(res, receiver, sender, rules, writer, sizing, peerName());
    controls = new ControlMessages(sender, receiver, rules, close, rings);
    credits = controls::takeCredits;
    if (downstreamCancelled) receiver.discarding = true;
  }

  /**
   * Takes over a connection accepted for us (its receives posted, its CQ armed): what came for
   * it so far comes now, ESTABLISHED among it if the client is up already. {@code
   * timeoutSetting}: what closes one nobody takes, if anything does.
   */
  private void adopt(EarlyAccept early, String timeoutSetting) {
    if (!early.claim()) {
      fail(failure("accepting: the connection was materialized already, or closed after "
          + timeoutSetting + " with no flow to take it"));
      return;
    }
    if (early.failure() != null) {
      fail(new RdmaStreamException("RDMA connection to", remote,
          "accepting: " + early.failure().getMessage(), early.failure()));
      return;
    }
    adopted = early;
    id = early.id;
    res = early.resources();
    dataPath();
    receiver.takeReceivesToPost(); // posted when it was accepted
    if (lend) lendRing();
    usePeerRing(early.peerRing());
    phase = Phase.CONNECTING;
    early.attach(cmEvents::invoke, cmStopped::invoke, () -> wake.invoke(Boolean.TRUE));
  }

  private void running() {
    phase = Phase.RUNNING;
    established = true;
    cancelTimer("connect");
    // the address as the application named it, as Tcp's (resolved or not)
    mat.connected().complete(TcpHandles.outgoing(
        role instanceof ConnectionStage.Role.Outgoing o ? o.remote() : remote, id.localAddress()));
    meter = rt.meter.opened(active() ? "client" : "server", peer(), id.localAddress(),
        writer.sent, receiver.received);
    if (!isClosed(in) && !upstreamDone) pull(in);
    drainCq();
  }

  /**
   * Our ring and send buffers follow the traffic ({@code tick}: the resize timer), which ticks
   * only while something is large: ten thousand idle connections cost no timer.
   */
  private void resize(boolean tick) {
    if (stopped() || phase != Phase.RUNNING || sizing == null) return;
    rings.maybeAnnounce(tick, !outDone && !receiver.discarding
        && close.theirs() == CloseHandshake.Theirs.OPEN);
    rings.resizeSend(tick);
    if (rings.anyLarge() == ticking) return;
    ticking = !ticking;
    if (ticking) {
      scheduleWithFixedDelay("resize", sizing.shrinkAfter(), sizing.shrinkAfter());
    } else {
      cancelTimer("resize");
    }
  }

  @Override
  public void onTimer(Object key) {
    if ("resize".equals(key)) {
      resize(true);
    } else if ("connect".equals(key)) {
      fail(failure("not connected within " + settings.connectTimeout() + " ("
          + settings.path() + ".connect-timeout)"));
    } else if ("flushed".equals(key)) {
      peerGone(flushReason);
    }
  }

  // ------------------------------------------------------------ sending

  private void onElement(Object element) {
    String gone = peerClosed ? "the peer closed the connection"
        : close.hasPeerCancelled() ? "the peer stopped reading (its stream was cancelled)" : null;
    if (gone != null) {
      fail(failure(gone + ": a further " + ElementWriter.describe(element)
          + " cannot be delivered"));
      return;
    }
    if (element instanceof ByteString bs) {
      String oversize = writer.oversize(bs.length(), settings);
      if (oversize != null) {
        fail(failure(oversize));
        return;
      }
    } else if (!(element instanceof BulkChunk)) {
      fail(new IllegalArgumentException("an RDMA connection takes ByteString or BulkChunk,"
          + " got " + (element == null ? "null" : element.getClass().getName())));
      return;
    }
    writer.take(element);
    progress();
  }

  /** Writes as much of the current element as credits, buffers and the send queue allow. */
  private void trySend() {
    boolean finished;
    try {
      finished = writer.writeSome(credits);
      meter.sendTried(writer.busy() && sender.credits() == 0);
      // what gathers behind a burst's first goes once the events ready now are handled
      // (burstEnd comes after them)
      if (writer.burstBegan() && !burstEndDue) {
        burstEndDue = true;
        burstEnd.invoke(Boolean.TRUE);
      }
      writer.flushIfDue(credits, upstreamDone);
    } catch (Sender.PostFailed e) {
      fail(failure(e.getMessage()));
      return;
    } catch (RuntimeException e) {
      fail(e);
      return;
    }
    if (finished && !upstreamDone && !isClosed(in) && !hasBeenPulled(in)) pull(in);
  }

  /** Control messages, when they are due and the send queue has room. */
  private void sendControl() {
    if (stopped() || phase != Phase.RUNNING) return;
    try {
      controls.sendDue(upstreamDone && !writer.busy());
    } catch (Sender.PostFailed e) {
      fail(failure(e.getMessage()));
    }
  }

  // ------------------------------------------------------------ completions

  private void drainCq() {
    if (stopped() || res == null || res.cq == null) return;
    try {
      while (true) {
        int n = res.cq.poll(res.wcs);
        if (n == 0) {
          res.cq.requestNotify(false);
          n = res.cq.poll(res.wcs); // what came before the arming raised no event
          if (n == 0) break;
        }
        for (int i = 0; i < n && !stopped(); i++) completion(i);
        if (stopped()) return;
      }
    } catch (RuntimeException e) {
      fail(failure("polling the CQ failed: " + e.getMessage()));
      return;
    }
    repost();
    progress();
  }

  private void completion(int i) {
    WorkCompletions wcs = res.wcs;
    long wrId = wcs.wrId(i);
    int status = wcs.statusCode(i);
    if (wrId == ConnectionResources.RECV_WR_ID) {
      receiver.received();
      if (status != 0) {
        broken(status, "a receive");
        return;
      }
      int imm = wcs.immediate(i);
      String wrong = rules.receive(wcs.opcode(i), wcs.hasImmediate(i), wcs.byteLength(i), imm,
          sender.writes());
      if (wrong != null) {
        fail(failure("protocol error: " + wrong));
        return;
      }
      int kind = Wire.kind(imm);
      if (kind == Wire.CONTROL && Wire.code(imm) == Wire.CANCEL) {
        peerStoppedReading(Wire.credits(imm));
        return;
      }
      sender.credited(Wire.credits(imm));
      int code = kind == Wire.CONTROL ? Wire.code(imm) : -1;
      if (code == Wire.FIN) close.peerFin();
      if (code == Wire.FIN_ACK) close.finAcked();
      String bad = rings.received(kind, code, wcs.byteLength(i));
      if (bad != null) fail(failure("protocol error: " + bad));
      return;
    }
    sender.completed(wrId);
    if (status != 0) broken(status, "a send");
  }

  /**
   * The peer's application stopped reading, having taken {@code taken} of our writes (modulo
   * 2^24). Anything written beyond them was dropped: a failure, as is any element after this
   * (Tcp's write after the peer closed). With nothing lost our upstream may still complete.
   */
  private void peerStoppedReading(int taken) {
    String lost = close.peerCancelled(sender.writes(), taken, writer.busy());
    if (lost != null) {
      fail(failure(lost));
      return;
    }
    if (!halfClose && !upstreamDone) {
      upstreamDone = true;
      if (!isClosed(in)) cancel(in);
    }
  }

  private void broken(int status, String what) {
    WcStatus s = WcStatus.of(status);
    String cause = res.qp != null ? res.qp.errorCause().orElse(null) : null;
    if (s != WcStatus.WR_FLUSH_ERR) {
      fail(failure(CompletionFailure.describe(what, s, cause)));
    } else if (flushReason == null) {
      // the QP went to the error state: the CM's DISCONNECTED usually says why, shortly
      flushReason = CompletionFailure.flushed(what, s, cause);
      scheduleOnce("flushed", FLUSH_GRACE);
    }
  }

  private void repost() {
    if (tornDown || disconnected || flushReason != null) return;
    int n = receiver.takeReceivesToPost();
    if (n == 0) return;
    try {
      res.postReceives(n);
    } catch (RuntimeException e) {
      fail(failure("posting receives failed: " + e.getMessage()));
    }
  }

  // ------------------------------------------------------------ delivering

  /** Gives downstream what it asked for, freeing each slot as its message is taken. */
  private void deliver() {
    receiver.reclaim(); // released since: no need to wait
    Arrivals arrivals = receiver.arrivals;
    while (arrivals.size() > 0) {
      // the FIN too waits for demand: downstream asking again is what says it has taken the
      // last message, and only then may the FIN_ACK say so
      if (!receiver.discarding && !outDone && !isAvailable(out)) return;
      if (arrivals.nextKind() == Arrivals.FIN) {
        arrivals.pop();
        close.taken();
        if (!outDone) {
          outDone = true;
          complete(out);
        }
        return;
      }
      Object element;
      try {
        element = receiver.take();
      } catch (IllegalStateException e) {
        fail(failure(e.getMessage()));
        return;
      }
      if (element != null) push(out, element);
    }
  }

  /** From setUp: the ring goes to a {@link LeasedRing}, which wakes us on releases. */
  private void lendRing() {
    AsyncCallback<Boolean> released = createAsyncCallback(x -> {
      if (tornDown) return;
      receiver.woken();
      progress();
    });
    res.lend(receiver, peerName(), () -> released.invoke(Boolean.TRUE));
  }

  /** After anything happened: deliver, send, say what is due, and see if we are done. */
  private void progress() {
    if (stopped() || phase != Phase.RUNNING) return;
    deliver();
    if (stopped()) return;
    resize(false);
    trySend();
    if (stopped()) return;
    sendControl();
    if (stopped()) return;
    checkDone();
  }

  private void checkDone() {
    // after a CANCEL, the peer's FIN or its going says it has stopped writing
    if (close.done(sender.outstanding(), halfClose, downstreamCancelled)) finish();
  }

  private void finish() {
    meter.ended(null); // its figures go to the metrics and Flight Recorder
    mat.closed().complete(new TransferResult(writer.sent.bytes(), writer.sent.messages(),
        receiver.received.bytes(), receiver.received.messages()));
    completeStage();
  }

  /**
   * The peer is gone (DISCONNECTED, or the QP flushed). After its FIN, and once we have
   * answered it, that is how a connection ends; before, the peer vanished or aborted.
   */
  private void peerGone(String reason) {
    if (stopped()) return;
    // completions that came before the end are still in the CQ: take them first
    drainCq();
    if (stopped()) return;
    log.debug("{}: {}; {} arrivals={} sq={}", peerName(), reason, close,
        receiver.arrivals.size(), sender.outstanding());
    String failed = close.whenPeerGone(reason, receiver.arrivals.size(), writer.busy(),
        writer.sent.messages());
    if (failed != null) {
      fail(failure(failed));
    } else if (!upstreamDone && !isClosed(in)) {
      // it closed completely while our writing side is open: as with Tcp, our end of data is
      // still a graceful close, and an element more fails (a broken pipe)
      peerClosed = true;
      tearDown();
      if (!hasBeenPulled(in)) pull(in);
    } else {
      finish();
    }
  }

  // ------------------------------------------------------------ the end

  @Override
  public void postStop() {
    tearDown();
    if (meter != null) meter.ended(cause == null ? null : String.valueOf(cause.getMessage()));
    mat.connected().completeExceptionally(cause != null ? cause
        : failure("the stream stopped before the connection was up"));
    mat.closed().completeExceptionally(cause != null ? cause
        : failure("the stream stopped before the connection closed gracefully"));
    mat.binding().completeExceptionally(cause != null ? cause
        : failure("the stream stopped before it was bound"));
  }

  /** Torn down, or failing: the stage ends after this callback, and does nothing more. */
  private boolean stopped() {
    return tornDown || cause != null;
  }

  private void fail(Throwable ex) {
    log.debug("{} connection with {} failed: {}", active() ? "client" : "server",
        peerName(), ex.toString());
    if (cause == null) {
      cause = ex;
      rt.meter.failed(meter, peer(), phase.name(), ex);
    }
    failStage(ex);
  }

  private void unlisten() {
    if (listener != null) {
      rt.cm().destroy(listener, false);
      listener = null;
    }
    unbound.complete(Done.getInstance());
  }

  /** The listener, then the connection's resources (see {@link ConnectionResources#close}). */
  private void tearDown() {
    if (tornDown) return;
    tornDown = true;
    unlisten();
    boolean up = established || (adopted != null && adopted.establishedEarly());
    // a request that could not be accepted was rejected and freed where it came
    if (res != null) res.close(up && !disconnected, false, peerName());
  }
}
