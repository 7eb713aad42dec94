package dev.pekkordma.actors.datagram;

import dev.pekkordma.actors.datagram.DatagramEndpoint.*;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.CompletionHandler;
import dev.pekkordma.runtime.internal.datagram.AddressHandles;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import dev.pekkordma.runtime.internal.datagram.SidrHello;
import dev.pekkordma.runtime.internal.datagram.PeerKey;
import dev.pekkordma.runtime.internal.datagram.Resolutions;
import dev.pekkordma.runtime.internal.datagram.SidrAnswers;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.runtime.internal.datagram.UdTarget;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.spi.Checks;
import java.net.InetSocketAddress;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/** One incarnation of a {@link DatagramEndpoint}: what it opened, and its messages. */
final class EndpointLogic {

  private final ActorContext<Command> ctx;
  private final RdmaRuntime runtime;
  private final DatagramSettings settings;
  private final EndpointLineage lineage;
  private final Object incarnation = new Object();
  private CmDispatcher cm;
  private CmId listener;
  private UdResources res;
  private AddressHandles handles;
  private SendPath sends;
  private ReceivePath receives;
  private PeerBook peers;
  private SidrAnswers answers;
  private Resolutions<SendPath.PendingSend> resolutions;
  private byte[] hello;
  private int port;
  private int sgidIndex;
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
      DeviceContext device = listener.verbs();
      if (device == null) {
        throw new IllegalArgumentException("the address is on no RDMA device (a wildcard"
            + " address names none: bind to an address of the device)");
      }
      port = listener.portNum();
      InetSocketAddress bound = listener.localAddress();
      CompletionHandler handler = UdBatch.to(b -> self.tell(new Completions(incarnation, b)),
          r -> self.tell(new CqFailed(incarnation, r)));
      res = UdResources.open(runtime, device, port, settings.receiveBuffers(),
          settings.sendBuffers(), true, "the datagram endpoint at " + SocketAddresses.format(bound),
          settings.buffersSetting(), (hub, n) -> hub.createPolledCq(n, handler),
          this::verbsQp, qp -> qp::close);
      handles = new AddressHandles(res.pd(), settings.maxPeers());
      sends = new SendPath(res, handles);
      peers = new PeerBook(settings.maxPeers(), settings.peerTtl());
      receives = new ReceivePath(res, peers::peer);
      receives.postAll();
      answers = new SidrAnswers(cm, settings.maxPeers());
      hello = new SidrHello(res.qp().qpNum(), bound.getPort()).encode();
      resolutions = new Resolutions<>(cm, events::tell, stopped, settings.resolveTimeout());
      resolutions.from(new InetSocketAddress(bound.getAddress(), 0), hello);
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
          g.replyTo().tell(new Status(lineage.address, res.qp().qpNum(), res.mtu, peers.routes(),
              answers.size(), handles.size(), sends.waiting() + resolutions.waiting(),
              receives.malformed()));
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
        new SendPath.PendingSend(peers.route(s.to()), s.data(), s.replyTo(), s.to());
    if (!admit(p, "to " + SocketAddresses.format(s.to()))) return Behaviors.same();
    if (p.target() != null) {
      sends.add(p);
      return drain();
    }
    CmId started;
    try {
      started = resolutions.await(s.to(), p);
    } catch (RuntimeException e) {
      SendPath.answer(p, PeerBook.cannotResolve(s.to(), e.getMessage()));
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
    AddressVector av = AddressVector.global(r.to().gid(), sgidIndex, port);
    SendPath.PendingSend p = new SendPath.PendingSend(new UdTarget(av, r.to().qpn(),
        UdParameters.UDP_QKEY), r.data(), r.replyTo(), r.to().address());
    if (!admit(p, "to " + r.to())) return Behaviors.same();
    sends.add(p);
    return drain();
  }

  /** Refuses, answering, what is over the path MTU or beyond max-pending-sends. */
  private boolean admit(SendPath.PendingSend p, String to) {
    String over = Checks.overMtu(p.data().size(), res.mtu);
    if (over != null) {
      answer(p.replyTo(), p.to(), over + " (" + to + ")");
      return false;
    }
    if (sends.waiting() + resolutions.waiting() >= settings.maxPendingSends()) {
      answer(p.replyTo(), p.to(), "a datagram " + to + " finds " + settings.maxPendingSends()
          + " sends waiting already (" + settings.setting("max-pending-sends") + ")");
      return false;
    }
    return true;
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
      String why = PeerBook.cannotResolve(o.to(), o.failure());
      for (SendPath.PendingSend p : o.waiting()) SendPath.answer(p, why);
      return;
    }
    UdParameters ud = o.ud();
    AddressVector av = ud.addressVector();
    sgidIndex = av.sgidIndex();
    UdTarget t = new UdTarget(av, ud.qpNum(), ud.qkey());
    peers.route(o.to(), t);
    SidrHello h = SidrHello.parse(ud.privateData());
    if (h != null) peers.knownAt(av.dgid(), h.qpn(), o.to());
    for (SendPath.PendingSend p : o.waiting()) {
      sends.add(new SendPath.PendingSend(t, p.data(), p.replyTo(), p.to()));
    }
    drain();
  }

  // ------------------------------------------------------------ the CM

  private Behavior<Command> cmEvent(CmEvent e) {
    if (e.type() == CmEventType.CONNECT_REQUEST && e.listenId() == listener) {
      answerSidr(e);
    } else if (e.id() == listener || answers.owns(e.id())) {
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

  /** A peer resolves us: a UD QP on the request's id, which the SIDR answer names. */
  private void answerSidr(CmEvent e) {
    CmId id = e.id();
    UdParameters ud = e.ud();
    if (id.verbs() != res.context) {
      cm.destroy(id, true);
      ctx.getLog().warn("datagram endpoint {}: a SIDR request came on another device",
          lineage.address);
      return;
    }
    try {
      id.createQp(res.pd(), res.attributes(1));
      id.accept(ConnectionParameters.withPrivateData(hello));
    } catch (RuntimeException x) {
      cm.destroy(id, true);
      ctx.getLog().warn("datagram endpoint {}: answering a SIDR request failed: {}",
          lineage.address, x.getMessage());
      return;
    }
    PeerKey key = null;
    SidrHello h = SidrHello.parse(ud != null && ud.privateData() != null ? ud.privateData()
        : e.privateData());
    if (ud != null && ud.addressVector() != null) {
      AddressVector av = ud.addressVector();
      sgidIndex = av.sgidIndex();
      InetSocketAddress remote = id.remoteAddress();
      if (h != null && remote != null) {
        key = new PeerKey(av.dgid(), h.qpn());
        InetSocketAddress at = new InetSocketAddress(remote.getAddress(), h.port());
        peers.knownAt(av.dgid(), h.qpn(), at);
        // it listens there, from that QP: answering by address needs no resolving
        peers.route(at, new UdTarget(av, h.qpn(), UdParameters.UDP_QKEY));
      }
    }
    answers.accepted(id, key);
  }

  // ------------------------------------------------------------ completions

  private void deliver(ReceivedDatagram r) {
    for (ActorRef<ReceivedDatagram> s : lineage.subscribers) s.tell(r);
  }

  private Behavior<Command> completions(Completions c) {
    if (c.incarnation() != incarnation) return Behaviors.same();
    String failed = c.batch().sortInto(sends, receives, this::deliver);
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
    if (answers != null) answers.closeAll();
    if (res != null) res.close(handles == null ? () -> {} : handles::closeAll);
    res = null;
  }
}
