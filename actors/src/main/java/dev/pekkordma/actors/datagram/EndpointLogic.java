package dev.pekkordma.actors.datagram;

import dev.pekkordma.actors.datagram.DatagramEndpoint.*;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.CompletionHandler;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import dev.pekkordma.runtime.internal.datagram.PeerKey;
import dev.pekkordma.runtime.internal.datagram.Resolutions;
import dev.pekkordma.runtime.internal.datagram.UdEndpoint;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.runtime.internal.datagram.UdTarget;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import java.net.InetSocketAddress;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * One incarnation of a {@link DatagramEndpoint}: its messages, and the sends that wait (for a
 * slot, for their peer's resolution). The endpoint itself, with SIDR, peers and receives, is
 * the runtime's {@link UdEndpoint}.
 */
final class EndpointLogic {

  private final ActorContext<Command> ctx;
  private final RdmaRuntime runtime;
  private final DatagramSettings settings;
  private final EndpointLineage lineage;
  private final Object incarnation = new Object();
  private CmDispatcher cm;
  private CmId listener;
  private UdEndpoint core;
  private UdResources res;
  private SendPath sends;
  private Resolutions<SendPath.PendingSend> resolutions;
  private int port;
  private String why = "unbound";

  private EndpointLogic(ActorContext<Command> ctx, RdmaRuntime runtime,
      DatagramSettings settings, EndpointLineage lineage) {
    this.ctx = ctx;
    this.runtime = runtime;
    this.settings = settings;
    this.lineage = lineage;
  }

  static Behavior<Command> start(ActorContext<Command> ctx, RdmaRuntime runtime,
      DatagramSettings settings, int backlog, EndpointLineage lineage) {
    return new EndpointLogic(ctx, runtime, settings, lineage).bind(backlog);
  }

  private Behavior<Command> bind(int backlog) {
    ActorRef<CmEvent> events = ctx.messageAdapter(CmEvent.class, CmEventArrived::new);
    ActorRef<Command> self = ctx.getSelf();
    Consumer<RuntimeException> stopped = x -> self.tell(new CmStopped(x.getMessage()));
    try {
      cm = runtime.cm();
      listener = cm.createId("datagram endpoint " + lineage.address, RdmaPortSpace.UDP,
          events::tell, stopped);
      listener.bind(lineage.address);
      DeviceContext device = UdEndpoint.deviceOf(listener);
      port = listener.portNum();
      InetSocketAddress bound = listener.localAddress();
      CompletionHandler handler = UdBatch.to(b -> self.tell(new Completions(incarnation, b)),
          r -> self.tell(new CqFailed(incarnation, r)));
      core = new UdEndpoint(cm, settings, key -> {});
      res = core.open(runtime, device, port, true,
          "the datagram endpoint at " + SocketAddresses.format(bound), settings.maxPeers(),
          (hub, n) -> hub.createPolledCq(n, handler), this::verbsQp, qp -> qp::close);
      sends = new SendPath(res, core.handles());
      resolutions = new Resolutions<>(cm, events::tell, stopped, settings.resolveTimeout());
      resolutions.from(new InetSocketAddress(bound.getAddress(), 0), core.hello(bound.getPort()));
      listener.listen(backlog);
      lineage.address = bound;
    } catch (RuntimeException e) {
      freeAll();
      if (lineage.bound) fatal("binding again failed: " + e.getMessage());
      lineage.handler.tell(new BindFailed(lineage.address, e.getMessage()));
      return Behaviors.stopped();
    }
    lineage.bound = true;
    ctx.watchWith(lineage.handler, HandlerGone.INSTANCE);
    lineage.handler.tell(new Bound(self, lineage.address, res.qp().qpNum(), res.mtu));
    return running();
  }

  /** The endpoint's own QP, by verbs on its port (the listening id stays a listener only). */
  private QueuePair verbsQp(ProtectionDomain pd, QpInitAttributes attributes) {
    return UdResources.verbsQp(pd, attributes, port);
  }

  private Behavior<Command> running() {
    return Behaviors.receive(Command.class)
        .onMessage(Send.class, this::send)
        .onMessage(Reply.class, this::reply)
        .onMessage(Subscribe.class, s -> {
          if (lineage.subscribers.add(s.subscriber())) {
            ctx.watchWith(s.subscriber(), new SubscriberGone(s.subscriber()));
          }
          return Behaviors.same();
        })
        .onMessage(Unsubscribe.class, s -> {
          lineage.subscribers.remove(s.subscriber());
          return Behaviors.same();
        })
        .onMessage(SubscriberGone.class, s -> {
          lineage.subscribers.remove(s.subscriber());
          return Behaviors.same();
        })
        .onMessageEquals(Unbind.INSTANCE, () -> stop("unbound"))
        .onMessageEquals(HandlerGone.INSTANCE, () -> stop("its handler stopped"))
        .onMessage(GetStatus.class, g -> {
          g.replyTo().tell(new Status(lineage.address, res.qp().qpNum(), res.mtu, core.routes(),
              core.answers(), core.handles().size(), sends.waiting() + resolutions.waiting(),
              core.malformed()));
          return Behaviors.same();
        })
        .onMessage(Inspect.class, i -> {
          i.replyTo().tell(res.qp());
          return Behaviors.same();
        })
        .onMessage(CmEventArrived.class, e -> cmEvent(e.event()))
        .onMessage(CmStopped.class, c -> stop("the CM's events stopped: " + c.reason()))
        .onMessage(Completions.class, this::completions)
        .onMessage(CqFailed.class, c -> c.incarnation() != incarnation ? Behaviors.same()
            : fatal("its CQ failed: " + c.reason()))
        .onMessage(ResolveTimedOut.class, t -> {
          var o = resolutions.timedOut(t.id(), settings.setting("resolve-timeout"));
          if (o != null) resolved(o);
          return Behaviors.same();
        })
        .onSignal(PostStop.class, s -> {
          freeAll();
          lineage.handler.tell(new Unbound(lineage.address, why));
          return Behaviors.same();
        })
        .onSignal(PreRestart.class, s -> {
          freeAll();
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> stop(String reason) {
    why = reason;
    return Behaviors.stopped();
  }

  /** Tells the handler, then has the supervisor free everything and bind again. */
  private Behavior<Command> fatal(String reason) {
    lineage.handler.tell(new Restarting(lineage.address, reason));
    throw new FatalException(reason);
  }

  // ------------------------------------------------------------ sending

  private Behavior<Command> send(Send s) {
    SendPath.PendingSend p =
        new SendPath.PendingSend(core.route(s.to()), s.data(), s.replyTo(), s.to());
    if (!admit(p, "to " + SocketAddresses.format(s.to()))) return Behaviors.same();
    if (p.target() != null) {
      sends.add(p);
      return drain();
    }
    CmId started;
    try {
      started = resolutions.await(s.to(), p);
    } catch (RuntimeException e) {
      SendPath.answer(p, UdEndpoint.cannotResolve(s.to(), e.getMessage()));
      return Behaviors.same();
    }
    if (started != null) {
      ctx.scheduleOnce(settings.resolveTimeout(), ctx.getSelf(), new ResolveTimedOut(started));
    }
    return Behaviors.same();
  }

  private Behavior<Command> reply(Reply r) {
    if (r.to().gid().isZero()) {
      answer(r.replyTo(), r.to().address(), "the datagram from " + r.to() + " came without a"
          + " GRH, so there is no GID to answer");
      return Behaviors.same();
    }
    AddressVector av = AddressVector.global(r.to().gid(), core.sgidIndex(), port);
    SendPath.PendingSend p = new SendPath.PendingSend(new UdTarget(av, r.to().qpn(),
        UdParameters.UDP_QKEY), r.data(), r.replyTo(), r.to().address());
    if (!admit(p, "to " + r.to())) return Behaviors.same();
    sends.add(p);
    return drain();
  }

  /** Refuses, answering, what is over the path MTU or beyond max-pending-sends. */
  private boolean admit(SendPath.PendingSend p, String to) {
    String refused = core.refusal(p.data().size(), sends.waiting() + resolutions.waiting(), to);
    if (refused != null) answer(p.replyTo(), p.to(), refused);
    return refused == null;
  }

  private static void answer(ActorRef<SendResult> replyTo, InetSocketAddress to, String why) {
    if (replyTo != null) replyTo.tell(new SendResult.SendFailed(to, why));
  }

  private Behavior<Command> drain() {
    try {
      sends.drain();
    } catch (RuntimeException e) {
      return fatal("posting sends failed: " + e.getMessage());
    }
    return Behaviors.same();
  }

  private void resolved(Resolutions.Resolved<SendPath.PendingSend> o) {
    if (o.failure() != null) {
      String why = UdEndpoint.cannotResolve(o.to(), o.failure());
      for (SendPath.PendingSend p : o.waiting()) SendPath.answer(p, why);
      return;
    }
    UdTarget t = core.learned(o);
    for (SendPath.PendingSend p : o.waiting()) {
      sends.add(new SendPath.PendingSend(t, p.data(), p.replyTo(), p.to()));
    }
    drain();
  }

  // ------------------------------------------------------------ the CM

  private Behavior<Command> cmEvent(CmEvent e) {
    if (e.type() == CmEventType.CONNECT_REQUEST && e.listenId() == listener) {
      core.answerSidr(e);
    } else if (e.id() == listener || core.answered(e.id())) {
      if (e.type() == CmEventType.DEVICE_REMOVAL) {
        return fatal("its device was removed (DEVICE_REMOVAL)");
      }
      ctx.getLog().debug("datagram endpoint {}: {}", lineage.address, e);
    } else if (resolutions.owns(e.id())) {
      var o = resolutions.onEvent(e);
      if (o != null) resolved(o);
    }
    return Behaviors.same();
  }

  // ------------------------------------------------------------ completions

  private void deliver(ReceivedDatagram r) {
    for (ActorRef<ReceivedDatagram> s : lineage.subscribers) s.tell(r);
  }

  private Behavior<Command> completions(Completions c) {
    if (c.incarnation() != incarnation) return Behaviors.same();
    String failed = c.batch().sortInto(core, sends,
        (gid, qpn) -> new Peer(gid, qpn, core.listensAt(new PeerKey(gid, qpn))), this::deliver);
    if (failed != null) return fatal(failed);
    try {
      res.flushReceives();
    } catch (RuntimeException e) {
      return fatal("posting receives failed: " + e.getMessage());
    }
    return drain();
  }

  // ------------------------------------------------------------ the end

  /** Frees everything this incarnation opened, in order; what is not open is skipped. */
  private void freeAll() {
    if (listener != null) cm.destroy(listener, false);
    listener = null;
    String reason = "the datagram endpoint at " + SocketAddresses.format(lineage.address)
        + " stopped";
    if (resolutions != null) {
      for (SendPath.PendingSend p : resolutions.closeAll()) SendPath.answer(p, reason);
    }
    if (sends != null) sends.failAll(reason);
    if (core != null) core.close();
    res = null;
  }
}
