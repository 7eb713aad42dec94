package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.CqDrain;
import dev.pekkordma.runtime.internal.datagram.AddressHandles;
import dev.pekkordma.runtime.internal.datagram.Resolutions;
import dev.pekkordma.runtime.internal.datagram.UdEndpoint;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.runtime.internal.datagram.UdTarget;
import dev.pekkordma.streams.Datagram;
import dev.pekkordma.streams.DatagramPeer;
import dev.pekkordma.streams.RdmaStreamException;
import dev.pekkordma.streams.impl.datagram.DatagramStage.Mode;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.WorkCompletions;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.TimerGraphStageLogic;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A datagram stage's logic. Sends: one element at a time is taken from upstream, and only when
 * a send slot is free and its peer is resolved, so a sender faster than the wire waits and
 * nothing is dropped here; the ready sends of a burst are posted in one call. Receives: every
 * slot is posted at start; a completed one waits for downstream's demand with its slot taken,
 * and is posted again (in batches) once its bytes were copied into the element. The endpoint
 * itself (SIDR, peers, reading a slot, sorting completions) is the runtime's {@link UdEndpoint}.
 */
final class DatagramLogic extends TimerGraphStageLogic {
  private static final Logger log = LoggerFactory.getLogger(DatagramLogic.class);
  private static final String JOIN = "join";
  private static final int POLL_BATCH = 32;

  private final DatagramStage stage;
  private final CompletableFuture<InetSocketAddress> bound;
  private AsyncCallback<CmEvent> cmEvents;
  private AsyncCallback<String> cmStopped;
  private AsyncCallback<Boolean> wake;
  private final CqDrain.Sink toCompletion = this::completion;
  private AsyncCallback<Boolean> burstEnd;
  private boolean burstEndDue;
  private CmDispatcher cm;
  private CmId id;
  private UdEndpoint core;
  private UdResources res;
  /** The completions of one poll, reused. */
  private WorkCompletions wcs;
  private SendSlots slots;
  private CompletedReceives arrivals;
  private final Senders senders;
  private final UdEndpoint.Completions sorted = new UdEndpoint.Completions() {
    @Override
    public void sent(int slot, int status) {
      AddressHandles.CountedHandle h = slots.complete(slot);
      if (h != null) core.handles().release(h);
    }

    @Override
    public void received(int slot, int byteLength, int flags, int sourceQp) {
      arrivals.add(slot, byteLength, flags, sourceQp);
    }
  };
  /** Nothing waits in them: the stage holds its one datagram itself. */
  private Resolutions<Void> resolutions;
  private Datagram held;
  private boolean upstreamDone;
  private boolean joined;
  /** The port the resources are on: the id's, or for a send-only stage its first peer's. */
  private int port = 1;
  private boolean tornDown;

  DatagramLogic(DatagramStage stage, CompletableFuture<InetSocketAddress> bound) {
    super(stage.shape());
    this.stage = stage;
    this.bound = bound;
    senders = new Senders(stage.settings.maxPeers(), key -> core.listensAt(key));
    setHandler(stage.in, new AbstractInHandler() {
      @Override
      public void onPush() {
        send(grab(stage.in));
      }

      @Override
      public void onUpstreamFinish() {
        upstreamDone = true;
        maybeFinish();
      }
    });
    setHandler(stage.out, new AbstractOutHandler() {
      @Override
      public void onPull() {
        deliver();
      }

      @Override
      public void onDownstreamFinish(Throwable cause) {
        completeStage();
      }
    });
  }

  @Override
  public void preStart() {
    cmEvents = createAsyncCallback(this::cmEvent);
    cmStopped = createAsyncCallback(why -> fail("the CM's events stopped: " + why));
    wake = createAsyncCallback(x -> drainCq());
    burstEnd = createAsyncCallback(x -> {
      burstEndDue = false;
      flush();
    });
    try {
      cm = stage.rt.cm();
      core = new UdEndpoint(cm, stage.settings, senders::forget);
      resolutions = new Resolutions<>(cm, cmEvents::invoke,
          x -> cmStopped.invoke(String.valueOf(x.getMessage())), stage.settings.resolveTimeout());
      if (stage.local != null) bindLocal();
    } catch (RuntimeException e) {
      RdmaStreamException f = new RdmaStreamException(stage.mode == Mode.MULTICAST
          ? "RDMA multicast group " + SocketAddresses.format(stage.group) + " from"
          : "RDMA datagram binding to", stage.local, String.valueOf(e.getMessage()), e);
      bound.completeExceptionally(f);
      failStage(RdmaStreamException.bindFailure(f, e));
      return;
    }
    if (stage.mode != Mode.MULTICAST) pull(stage.in);
  }

  /** Binds the stage's id, opens everything on its device, and listens or joins. */
  private void bindLocal() {
    id = cm.createId("datagram " + stage.mode + " " + stage.local, RdmaPortSpace.UDP,
        cmEvents::invoke,
        x -> cmStopped.invoke(String.valueOf(x.getMessage())));
    id.bind(stage.local);
    DeviceContext device = UdEndpoint.deviceOf(id);
    port = id.portNum();
    if (stage.mode == Mode.MULTICAST) {
      CmId owner = id;
      open(device, port, false, owner::createQp, qp -> owner::destroyQp);
      id.joinMulticast(stage.group);
      scheduleOnce(JOIN, stage.settings.resolveTimeout());
      return;
    }
    open(device, port, stage.mode == Mode.BIND, this::verbsQp, qp -> qp::close);
    InetSocketAddress at = id.localAddress();
    resolutions.from(new InetSocketAddress(at.getAddress(), 0), core.hello(at.getPort()));
    if (stage.mode == Mode.BIND) id.listen(stage.backlog);
    bound.complete(at);
  }

  private void open(DeviceContext device, int port, boolean shared,
      java.util.function.BiFunction<ProtectionDomain, QpInitAttributes, QueuePair> makeQp,
      java.util.function.Function<QueuePair, Runnable> destroyQp) {
    String what = stage.mode == Mode.MULTICAST ? "the multicast group "
        + SocketAddresses.format(stage.group) : "the datagram stage at "
        + (stage.local == null ? "an address of " + device.device().name()
            : SocketAddresses.format(stage.local));
    Runnable woken = () -> wake.invoke(Boolean.TRUE);
    res = core.open(stage.rt.runtime, device, port, shared, what, stage.settings.maxPeers(),
        (hub, n) -> {
          CompletionQueue cq = hub.createCq(n, woken);
          cq.requestNotify(false); // nothing can complete before the QP is made
          return cq;
        }, makeQp, destroyQp);
    wcs = new WorkCompletions(POLL_BATCH);
    slots = new SendSlots(res.sends);
    arrivals = new CompletedReceives(res.receives);
  }

  /** The endpoint's own QP, by verbs on its port (the listening id stays a listener only). */
  private QueuePair verbsQp(ProtectionDomain pd, QpInitAttributes attributes) {
    return UdResources.verbsQp(pd, attributes, port);
  }

  // ------------------------------------------------------------ sending

  private void send(Datagram d) {
    DatagramPeer peer = d.peer();
    InetSocketAddress to = peer.address();
    String over = core.overMtu(d.data().size());
    if (over != null) {
      fail(new RdmaStreamException("RDMA datagram to", to, over
          + (to == null ? " (to " + peer + ")" : "")));
      return;
    }
    UdTarget route = peer.hasQp() ? null : core.route(to);
    if (!peer.hasQp() && route == null) {
      held = d;
      try {
        CmId started = resolutions.await(to, null);
        if (started != null) scheduleOnce(started, stage.settings.resolveTimeout());
      } catch (RuntimeException e) {
        fail(new RdmaStreamException("RDMA datagram to", to,
            "cannot resolve it: " + e.getMessage(), e));
      }
      return;
    }
    if (res == null) {
      fail(new RdmaStreamException("RDMA datagram to", to, "a send-only stage answers a peer"
          + " only after it resolved one (it has no device before)"));
      return;
    }
    if (!slots.available()) {
      held = d;
      return;
    }
    AddressHandles.CountedHandle h;
    try {
      AddressHandles handles = core.handles();
      h = route != null ? handles.acquire(route.av().dgid(), route.av(), core.sgidIndex(),
          res.port) : handles.acquire(peer.gid(), null, core.sgidIndex(), res.port);
    } catch (RuntimeException e) {
      fail(new RdmaStreamException("RDMA datagram to", to, "no address handle to " + peer
          + ": " + e.getMessage(), e));
      return;
    }
    int slot = slots.take(h);
    if (route != null) {
      res.addSend(slot, d.data(), h.ah, route.qpn(), route.qkey());
    } else {
      res.addSend(slot, d.data(), h.ah, peer.qpn(), UdParameters.UDP_QKEY);
    }
    if (res.sendsQueued() >= res.sends / 2 + 1) flush(); else flushAtBurstEnd();
    if (slots.available() && !upstreamDone && !hasBeenPulled(stage.in)) pull(stage.in);
  }

  /** The held element, if it can go now; else more from upstream, if there is room. */
  private void resume() {
    if (held != null) {
      Datagram d = held;
      held = null;
      send(d);
    } else if (res != null && slots.available() && !upstreamDone && !hasBeenPulled(stage.in)
        && (stage.mode != Mode.MULTICAST || joined)) {
      pull(stage.in);
    }
  }

  private void flushAtBurstEnd() {
    if (!burstEndDue) {
      burstEndDue = true;
      burstEnd.invoke(Boolean.TRUE); // runs after what the interpreter is doing now
    }
  }

  private void flush() {
    if (res == null || tornDown) return;
    try {
      res.flushSends();
      res.flushReceives();
    } catch (RuntimeException e) {
      fail("posting failed: " + e.getMessage());
    }
  }

  private void maybeFinish() {
    if (upstreamDone && held == null && (slots == null || slots.inFlight() == 0)) {
      completeStage();
    }
  }

  // ------------------------------------------------------------ receiving

  private void deliver() {
    while (res != null && isAvailable(stage.out) && !arrivals.isEmpty()) {
      int slot = arrivals.slot();
      int byteLength = arrivals.byteLength();
      int flags = arrivals.flags();
      int source = arrivals.sourceQp();
      arrivals.pop();
      ByteString data = core.take(slot, byteLength, flags);
      if (data != null) {
        push(stage.out, new Datagram(data,
            senders.peer(core.senderHi(), core.senderLo(), source)));
      }
    }
    if (res != null && res.receivesQueued() > 0) {
      if (res.receivesQueued() >= res.receives / 4 + 1) flush(); else flushAtBurstEnd();
    }
  }

  private void drainCq() {
    if (tornDown || res == null) return;
    try {
      if (!CqDrain.drain(res.cq(), wcs, toCompletion)) return;
    } catch (RuntimeException e) {
      fail("polling the CQ failed: " + e.getMessage());
      return;
    }
    deliver();
    resume();
    maybeFinish();
  }

  private boolean completion(WorkCompletions wcs, int i) {
    String failed = core.sort(wcs.wrId(i), wcs.statusCode(i), wcs.byteLength(i), wcs.flags(i),
        wcs.sourceQp(i), sorted);
    if (failed != null) fail(failed);
    return failed == null;
  }

  // ------------------------------------------------------------ the CM

  private void cmEvent(CmEvent e) {
    if (tornDown) return;
    if (e.type() == CmEventType.CONNECT_REQUEST && e.listenId() == id && id != null) {
      core.answerSidr(e);
    } else if (e.id() == id && id != null) {
      if (e.type() == CmEventType.MULTICAST_JOIN && !joined && e.ud() != null) {
        joined(e.ud());
      } else if (e.type() == CmEventType.MULTICAST_ERROR || e.type()
          == CmEventType.DEVICE_REMOVAL) {
        fail(e.outcome());
      }
    } else if (resolutions.owns(e.id())) {
      Resolutions.Resolved<Void> o = resolutions.onEvent(e);
      if (o != null) resolved(o);
    }
  }

  private void joined(UdParameters ud) {
    cancelTimer(JOIN);
    joined = true;
    core.routeLasting(stage.group, new UdTarget(ud.addressVector(), ud.qpNum(), ud.qkey()));
    bound.complete(id.localAddress());
    resume();
  }

  private void resolved(Resolutions.Resolved<Void> o) {
    cancelTimer(o.id());
    if (o.failure() != null) {
      fail(new RdmaStreamException("RDMA datagram to", o.to(), "cannot resolve it: "
          + o.failure()));
      return;
    }
    if (res == null) { // a send-only stage: it works on the device the first peer is on
      try {
        port = o.port();
        open(o.device(), o.port(), false, this::verbsQp, qp -> qp::close);
        bound.complete(new InetSocketAddress(o.local() == null ? null
            : o.local().getAddress(), 0));
      } catch (RuntimeException e) {
        fail(new RdmaStreamException("RDMA datagram to", o.to(), e.getMessage(), e));
        return;
      }
    }
    core.learned(o);
    resume();
  }

  @Override
  public void onTimer(Object key) {
    if (JOIN.equals(key)) {
      if (!joined) fail("no MULTICAST_JOIN within " + stage.settings.resolveTimeout().toMillis()
          + " ms (" + stage.settings.setting("resolve-timeout") + ")");
    } else if (key instanceof CmId resolving) {
      Resolutions.Resolved<Void> o = resolutions.timedOut(resolving,
          stage.settings.setting("resolve-timeout"));
      if (o != null) resolved(o);
    }
  }

  // ------------------------------------------------------------ the end

  private void fail(String why) {
    fail(new RdmaStreamException(stage.mode == Mode.MULTICAST ? "RDMA multicast group"
        : "RDMA datagram stage at", stage.mode == Mode.MULTICAST ? stage.group : stage.local,
        why));
  }

  private void fail(RdmaStreamException e) {
    log.debug("{}", e.getMessage());
    bound.completeExceptionally(e);
    failStage(e);
  }

  @Override
  public void postStop() {
    tearDown();
    bound.completeExceptionally(new RdmaStreamException("RDMA datagram stage at", stage.local,
        "the stream stopped before it was bound"));
  }

  /** Frees everything in order: ids that make requests, the QPs, handles, the rest, the id. */
  private void tearDown() {
    if (tornDown) return;
    tornDown = true;
    if (resolutions != null) resolutions.closeAll();
    if (id != null && stage.mode == Mode.BIND) {
      cm.destroy(id, false);
      id = null;
    }
    if (joined) {
      try {
        id.leaveMulticast(stage.group);
      } catch (RuntimeException e) {
        log.debug("leaving {} failed: {}", stage.group, e.getMessage());
      }
    }
    if (core != null) core.close();
    if (wcs != null) wcs.close();
    if (id != null) cm.destroy(id, false);
  }
}
