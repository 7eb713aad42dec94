package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.runtime.internal.ConnectAttempt;
import dev.pekkordma.runtime.internal.CqDrain;
import dev.pekkordma.streams.RdmaStreamException;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.TransferResult;
import dev.pekkordma.verbs.WorkCompletions;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.pekko.Done;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SubscriptionWithCancelException;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running half of a {@link ConnectionStage}: it sets the connection up (listens, runs a
 * client's {@link ConnectAttempt} or takes over what a binding accepted, with the CM events the
 * CM dispatcher hands it), and from then on connects the connection's {@link
 * ConnectionProtocol} to the stage: its ports, the CQ's wake-ups (it polls the CQ on the stage's
 * own thread) and the CM's events become the protocol's events, and the protocol's actions
 * become the stage's. What it opens is {@link ConnectionResources}'.
 */
final class ConnectionLogic extends TimerGraphStageLogic {
  private static final Logger log = LoggerFactory.getLogger(ConnectionStage.class);
  private static final String CONNECT_TIMER = "connect";

  /** Where the stage is; a client's steps while CONNECTING are its attempt's. */
  private enum StagePhase { LISTENING, RESOLVING_HOST, CONNECTING, RUNNING }

  private final StreamsRuntime rt;
  private final RdmaStreamSettings settings;
  private final boolean lend;
  private final ConnectionStage.Role role;
  private final Inlet<Object> in;
  private final Outlet<Object> out;
  private final ConnectionStage.Mat mat;
  private final ConnectionPlan plan;
  private final ConnectionProtocol protocol;
  private InetSocketAddress remote;
  private CmId listener;
  private InetSocketAddress bound; // the listener's address, once bound
  private final CompletableFuture<Done> unbound = new CompletableFuture<>();
  private StagePhase phase = StagePhase.CONNECTING;
  private final ConnectAttempt attempt; // a client's; null for a server
  private CmId id;
  private ConnectionResources res; // with the id; opened by setUp
  private EarlyAccept adopted; // what the binding accepted, when it did
  private StreamsMeter.ConnectionMeter meter; // once running
  private boolean established;
  private boolean disconnected;
  private boolean tornDown;
  private Throwable cause;

  private AsyncCallback<CmEvent> cmEvents;
  private AsyncCallback<RuntimeException> cmStopped;
  private AsyncCallback<ConnectAttempt.Failure> acceptFailed;
  private AsyncCallback<Boolean> wake;
  /** Made once: the CQ is drained on every wake. */
  private final CqDrain.Sink toProtocol = this::toProtocol;
  private AsyncCallback<Boolean> burstEnd;
  private AsyncCallback<Done> stop;

  ConnectionLogic(ConnectionStage stage, ConnectionStage.Mat mat) {
    super(stage.shape());
    this.rt = stage.rt;
    this.settings = stage.settings;
    this.lend = stage.lend;
    this.role = stage.role;
    this.in = stage.in;
    this.out = stage.out;
    this.mat = mat;
    this.remote = role instanceof ConnectionStage.Role.Connecting o ? o.remote()
        : role instanceof ConnectionStage.Role.Accepting i ? i.request().remote() : null;
    this.plan = ConnectionPlan.of(rt, settings, stage.framing, lend);
    this.protocol = new ConnectionProtocol(plan, stage.closing, active(), this::failure,
        new Ports());
    this.attempt = active() ? new ConnectAttempt(settings.connectTimeout(),
        settings.path() + ".connect-timeout", System::nanoTime, new ClientSteps()) : null;
    setHandler(in, new AbstractInHandler() {
      @Override
      public void onPush() {
        protocol.offered(grab(in));
      }

      @Override
      public void onUpstreamFinish() {
        protocol.upstreamFinished();
      }

      @Override
      public void onUpstreamFailure(Throwable ex) {
        // an abort, as Tcp's: no FIN, the peer's stream fails
        protocol.aborted(IdleTimeout.named(ex, settings, peer()));
      }
    });
    setHandler(out, new AbstractOutHandler() {
      @Override
      public void onPull() {
        protocol.demanded();
      }

      @Override
      public void onDownstreamFinish(Throwable why) {
        if (why instanceof SubscriptionWithCancelException.NonFailureCancellation) {
          protocol.downstreamCancelled();
        } else {
          protocol.aborted(IdleTimeout.named(why, settings, peer()));
        }
      }
    });
  }

  /** The protocol's actions, on this stage. */
  private final class Ports implements ConnectionProtocol.Actions {
    @Override
    public void pull() {
      if (!isClosed(in) && !hasBeenPulled(in)) ConnectionLogic.this.pull(in);
    }

    @Override
    public void push(Object element) {
      ConnectionLogic.this.push(out, element);
    }

    @Override
    public void completeDownstream() {
      if (!isClosed(out)) complete(out);
    }

    @Override
    public void cancelUpstream(Throwable why) {
      if (isClosed(in)) return;
      if (why == null) {
        ConnectionLogic.this.cancel(in);
      } else {
        ConnectionLogic.this.cancel(in, why);
      }
    }

    @Override
    public void burstBegan() {
      burstEnd.invoke(Boolean.TRUE);
    }

    @Override
    public void schedule(ConnectionProtocol.Timer timer, Duration after, boolean repeat) {
      if (repeat) {
        scheduleWithFixedDelay(timer, after, after);
      } else {
        scheduleOnce(timer, after);
      }
    }

    @Override
    public void cancel(ConnectionProtocol.Timer timer) {
      cancelTimer(timer);
    }

    @Override
    public void sendTried(boolean stalled) {
      if (meter != null) meter.sendTried(stalled);
    }

    @Override
    public void close() {
      tearDown();
    }

    @Override
    public void end(TransferResult moved, RuntimeException writeFailure) {
      if (meter != null) meter.ended(writeFailure == null ? null : writeFailure.getMessage());
      if (writeFailure == null) {
        mat.closed().complete(moved);
      } else {
        mat.closed().completeExceptionally(writeFailure);
      }
      // after the events this one raised: a cancel with a cause, made just now, reaches our
      // upstream with its cause (a completion at once would cancel it again, plainly, first)
      stop.invoke(Done.getInstance());
    }

    @Override
    public void fail(Throwable why) {
      ConnectionLogic.this.fail(why);
    }
  }

  private boolean active() {
    return role instanceof ConnectionStage.Role.Connecting;
  }

  private String peerName() {
    return remote == null ? "the client at " + SocketAddresses.format(peer())
        : SocketAddresses.format(remote);
  }

  /** A failure for {@code reason}, naming the peer (or where a listener listens). */
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
    acceptFailed = createAsyncCallback(this::onAcceptFailed);
    wake = createAsyncCallback(x -> drainCq());
    burstEnd = createAsyncCallback(x -> protocol.burstOver());
    stop = createAsyncCallback(x -> completeStage());
    if (active()) attempt.begin(); // the host's resolution counts, as Tcp's
    if (active() && remote.isUnresolved()) { // as Tcp's: resolved first
      phase = StagePhase.RESOLVING_HOST;
      AsyncCallback<Object> resolved = createAsyncCallback(this::onResolved);
      HostResolver.resolve(rt.system, remote).whenComplete((address, failure) ->
          resolved.invoke(failure != null ? failure : address));
      return;
    }
    start();
  }

  /** The remote host's address (an InetSocketAddress), or why there is none. */
  private void onResolved(Object result) {
    if (stopped() || phase != StagePhase.RESOLVING_HOST) return;
    if (result instanceof InetSocketAddress address) {
      remote = address;
      start();
      return;
    }
    Throwable why = result instanceof CompletionException c && c.getCause() != null
        ? c.getCause() : (Throwable) result;
    fail(new RdmaStreamException("RDMA connection to", remote, "unknown host ("
        + why.getClass().getSimpleName() + ": " + why.getMessage() + ")", why));
  }

  private void start() {
    try {
      if (role instanceof ConnectionStage.Role.ListenOnce once) {
        listenOnce(once.address());
        return;
      }
      phase = StagePhase.CONNECTING;
      if (active()) {
        id = rt.createId("stream to " + peerName(), cmEvents, cmStopped);
        res = plan.resources(rt, id); // what it opens goes with the id
        attempt.resolve();
      } else {
        ConnectionStage.Passive passive = ((ConnectionStage.Role.Accepting) role).request();
        adopt(passive.accepted(), passive.acceptTimeoutSetting());
      }
    } catch (RuntimeException e) {
      String doing = role instanceof ConnectionStage.Role.ListenOnce ? "binding: "
          : active() ? "connecting: " : "accepting: ";
      fail(RdmaStreamException.bindFailure(failure(doing + e.getMessage()), e));
    }
  }

  /** Listens for one client at {@code address}; the binding is the materialized value. */
  private void listenOnce(InetSocketAddress address) {
    phase = StagePhase.LISTENING;
    listener = rt.createId("listener " + address, cmEvents, cmStopped);
    listener.bind(address);
    listener.listen(1);
    bound = listener.localAddress();
    AsyncCallback<Done> unbind = createAsyncCallback(d -> {
      if (phase == StagePhase.LISTENING) completeStage();
    });
    mat.binding().complete(TcpHandles.binding(bound, () -> {
      unbind.invoke(Done.getInstance());
      return unbound;
    }, unbound));
  }

  private void onCmEvent(CmEvent e) {
    if (tornDown) return;
    try {
      if (e.type() == CmEventType.CONNECT_REQUEST) {
        if (phase != StagePhase.LISTENING) {
          rt.cm().destroy(e.id(), true); // one client only
          return;
        }
        unlisten();
        remote = e.id().remoteAddress();
        adopt(EarlyAccept.accept(rt, e, plan), null);
        return;
      }
      if (e.id() == listener && listener != null) {
        if (e.type() == CmEventType.DEVICE_REMOVAL) {
          fail(failure("the RDMA device was removed (DEVICE_REMOVAL)"));
        }
        return;
      }
      if (attempt != null && !attempt.step().over()) {
        attempt.cmEvent(e);
        return;
      }
      switch (e.type()) {
        case ESTABLISHED:
          if (phase == StagePhase.CONNECTING) running(); // a server's
          return;
        case DISCONNECTED:
          disconnected = true;
          if (phase == StagePhase.RUNNING) {
            drainCq(); // completions that came before the end are still in the CQ: first
            protocol.peerDisconnected("the peer disconnected");
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
          if (phase != StagePhase.RUNNING) failedBy(e);
      }
    } catch (RuntimeException ex) {
      fail(failure(doing() + e.type() + ": " + ex.getMessage()));
    }
  }

  /** No CM event will come again: what waits for one fails; a running connection goes on. */
  private void onCmStopped(RuntimeException why) {
    if (tornDown) return;
    if (phase == StagePhase.RUNNING) {
      log.warn("{}: CM events stopped ({}); the connection goes on, but the peer's going will"
          + " show only when a request to it fails", peerName(), why.getMessage());
      return;
    }
    fail(failure((phase == StagePhase.LISTENING ? "" : doing()) + "the CM event reader stopped: "
        + why.getMessage()));
  }

  /** A CM event ends the setting up; a QP the peer broke first says so better: it comes first. */
  private void failedBy(CmEvent e) {
    if (e.type() == CmEventType.DEVICE_REMOVAL) {
      fail(failure("the RDMA device was removed (DEVICE_REMOVAL)"));
      return;
    }
    drainCq();
    if (!stopped()) fail(failure(doing() + CompletionFailure.connecting(e,
        role instanceof ConnectionStage.Role.Connecting o ? o.local() : null)));
  }

  /** A client's steps, as its {@link ConnectAttempt} asks for them. */
  private final class ClientSteps implements ConnectAttempt.ConnectSteps {
    @Override
    public void deadlineIn(Duration after) {
      scheduleOnce(CONNECT_TIMER, after);
    }

    @Override
    public void resolveAddress(Duration timeLeft) {
      id.resolveAddress(((ConnectionStage.Role.Connecting) role).local(), remote, timeLeft);
    }

    @Override
    public void resolveRoute(Duration timeLeft) {
      id.resolveRoute(timeLeft);
      setUp(); // the address names the device: its QP opens while the route resolves
    }

    @Override
    public void connect(Duration timeLeft) {
      id.connect(ConnectionParameters.withPrivateData(res.ring.describe(res.ringFlags).encode()));
    }

    @Override
    public void established(CmEvent event) {
      protocol.peerRing(Wire.Ring.decode(event.privateData()));
      running();
    }

    @Override
    public void rejected(CmEvent event) {
      failedBy(event);
    }

    @Override
    public void failed(ConnectAttempt.Failure why) {
      if (why.event() != null) {
        failedBy(why.event());
      } else if (why.threw() != null) { // from a local address in use: Tcp's bind failure
        fail(RdmaStreamException.bindFailure(failure(doing() + why.reason()), why.threw()));
      } else {
        fail(failure(doing() + why.reason()));
      }
    }
  }

  /** What a failure was doing: "connecting: ", "accepting: ", or nothing once running. */
  private String doing() {
    return phase == StagePhase.RUNNING ? "" : active() ? "connecting: " : "accepting: ";
  }

  /** The QP and everything it uses, registered once for the connection's life. */
  private void setUp() {
    res.open(() -> wake.invoke(Boolean.TRUE), peerName());
    protocol.open(res, null, false);
    res.cq.requestNotify(false);
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
    ConnectAttempt.Failure failed = early.failure();
    if (failed != null) {
      onAcceptFailed(failed);
      return;
    }
    adopted = early;
    id = early.id;
    res = early.resources();
    protocol.open(res, lend ? lendRing() : null, true);
    protocol.peerRing(early.peerRing());
    phase = StagePhase.CONNECTING;
    early.attach(cmEvents::invoke, cmStopped::invoke, acceptFailed::invoke,
        () -> wake.invoke(Boolean.TRUE));
  }

  /** The accepted connection's handshake failed: the CM's word, or the client never confirmed. */
  private void onAcceptFailed(ConnectAttempt.Failure why) {
    if (stopped()) return;
    if (why.event() != null) {
      failedBy(why.event());
    } else {
      fail(new RdmaStreamException("RDMA connection to", remote, "accepting: " + why.reason(),
          why.threw()));
    }
  }

  /** The ring goes to a {@link LeasedRing}, which wakes us on releases. */
  private LeasedRing lendRing() {
    AsyncCallback<Boolean> released = createAsyncCallback(x -> protocol.released());
    return res.lend(peerName(), () -> released.invoke(Boolean.TRUE));
  }

  private void running() {
    phase = StagePhase.RUNNING;
    established = true;
    cancelTimer(CONNECT_TIMER);
    // the address as the application named it, as Tcp's (resolved or not)
    mat.connected()
        .complete(
            TcpHandles.outgoing(
                role instanceof ConnectionStage.Role.Connecting o ? o.remote() : remote,
                id.localAddress()));
    meter = rt.meter.opened(active() ? "client" : "server", peer(), id.localAddress(),
        protocol.sent(), protocol.received());
    protocol.established();
    drainCq();
  }

  @Override
  public void onTimer(Object key) {
    if (key == ConnectionProtocol.Timer.FLUSHED) {
      drainCq(); // completions before the end first
      protocol.timer(ConnectionProtocol.Timer.FLUSHED);
    } else if (key instanceof ConnectionProtocol.Timer t) {
      protocol.timer(t);
    } else if (CONNECT_TIMER.equals(key)) {
      attempt.deadlinePassed(); // a client's: a server's is its accept's
    }
  }

  // ------------------------------------------------------------ completions

  /** Hands every completion the CQ holds to the protocol, and arms the CQ again. */
  private void drainCq() {
    if (stopped() || res == null || res.cq == null || protocol.over()) return;
    try {
      if (!CqDrain.drain(res.cq, res.wcs, toProtocol)) return;
    } catch (RuntimeException e) {
      fail(failure("polling the CQ failed: " + e.getMessage()));
      return;
    }
    protocol.polled();
  }

  /** One completion to the protocol; false once the protocol is over. */
  private boolean toProtocol(WorkCompletions wcs, int i) {
    protocol.completed(wcs, i);
    return !protocol.over();
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

  /** Failed, or the RDMA connection is over: no CQ, no CM events. */
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
    protocol.stop(); // the stage ends after this callback
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
    if (res != null) {
      res.close(up && !disconnected ? ConnectionResources.Farewell.DISCONNECT
          : ConnectionResources.Farewell.NONE, peerName());
    }
  }
}
