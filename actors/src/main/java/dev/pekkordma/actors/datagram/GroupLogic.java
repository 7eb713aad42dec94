package dev.pekkordma.actors.datagram;

import dev.pekkordma.actors.datagram.MulticastGroup.*;
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
import dev.pekkordma.runtime.internal.datagram.UdEndpoint;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.runtime.internal.datagram.UdTarget;
import dev.pekkordma.verbs.DeviceContext;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/** One incarnation of a {@link MulticastGroup} member. */
final class GroupLogic {
  private final ActorContext<Command> ctx;
  private final DatagramSettings settings;
  private final MembershipLineage lineage;
  private final Object incarnation = new Object();
  private CmDispatcher cm;
  private CmId id;
  private UdEndpoint core;
  private UdResources res;
  private SendPath sends;
  private UdTarget group;
  private final List<SendPath.PendingSend> early = new ArrayList<>();
  private boolean joined;
  private String why = "left";

  private GroupLogic(ActorContext<Command> ctx, DatagramSettings settings,
      MembershipLineage lineage) {
    this.ctx = ctx;
    this.settings = settings;
    this.lineage = lineage;
  }

  static Behavior<Command> start(ActorContext<Command> ctx, RdmaRuntime runtime,
      DatagramSettings settings, MembershipLineage lineage) {
    return new GroupLogic(ctx, settings, lineage).join(runtime);
  }

  private Behavior<Command> join(RdmaRuntime runtime) {
    ActorRef<CmEvent> events = ctx.messageAdapter(CmEvent.class, CmEventArrived::new);
    ActorRef<Command> self = ctx.getSelf();
    try {
      cm = runtime.cm();
      id = cm.createId("multicast member of " + lineage.group, RdmaPortSpace.UDP, events::tell,
          x -> self.tell(new CmStopped(x.getMessage())));
      id.bind(lineage.local);
      DeviceContext device = UdEndpoint.deviceOf(id);
      CmId qpOwner = id;
      CompletionHandler handler = UdBatch.to(b -> self.tell(new Completions(incarnation, b)),
          r -> self.tell(new CqFailed(incarnation, r)));
      core = new UdEndpoint(cm, settings, key -> {});
      res = core.open(runtime, device, id.portNum(), false,
          "the multicast group " + SocketAddresses.format(lineage.group), 1,
          (hub, n) -> hub.createPolledCq(n, handler), qpOwner::createQp,
          qp -> qpOwner::destroyQp);
      sends = new SendPath(res, core.handles());
      id.joinMulticast(lineage.group);
    } catch (RuntimeException e) {
      return failed(e.getMessage());
    }
    ctx.watchWith(lineage.handler, HandlerGone.INSTANCE);
    ctx.scheduleOnce(settings.resolveTimeout(), self, new JoinTimedOut(incarnation));
    return running();
  }

  /** Joining failed: the first time the handler hears so; after a restart it is tried again. */
  private Behavior<Command> failed(String reason) {
    freeAll();
    if (lineage.joined) return fatal("joining again failed: " + reason);
    lineage.handler.tell(new JoinFailed(lineage.group, reason));
    return Behaviors.stopped();
  }

  private Behavior<Command> running() {
    return Behaviors.receive(Command.class)
        .onMessage(Send.class, this::send)
        .onMessageEquals(Leave.INSTANCE, () -> stop("left"))
        .onMessageEquals(HandlerGone.INSTANCE, () -> stop("its handler stopped"))
        .onMessage(CmEventArrived.class, e -> cmEvent(e.event()))
        .onMessage(CmStopped.class, c -> stop("the CM's events stopped: " + c.reason()))
        .onMessage(Completions.class, this::completions)
        .onMessage(CqFailed.class, c -> c.incarnation() != incarnation ? Behaviors.same()
            : fatal("its CQ failed: " + c.reason()))
        .onMessage(JoinTimedOut.class, t -> t.incarnation() != incarnation || joined
            ? Behaviors.same()
            : failed("no MULTICAST_JOIN within " + settings.resolveTimeout().toMillis() + " ms ("
                + settings.setting("resolve-timeout") + ")"))
        .onSignal(PostStop.class, s -> {
          freeAll();
          lineage.handler.tell(new Left(lineage.group, why));
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

  private Behavior<Command> fatal(String reason) {
    lineage.handler.tell(new Restarting(lineage.group, reason));
    throw new DatagramEndpoint.FatalException(reason);
  }

  private Behavior<Command> send(Send s) {
    String to = "to the group " + SocketAddresses.format(lineage.group);
    SendPath.PendingSend p = new SendPath.PendingSend(group, s.data(), s.replyTo(), lineage.group);
    String refused = core.refusal(s.data().size(), sends.waiting() + early.size(), to);
    if (refused != null) {
      SendPath.answer(p, refused);
    } else if (!joined) {
      early.add(p);
    } else {
      sends.add(p);
      return drain();
    }
    return Behaviors.same();
  }

  private Behavior<Command> drain() {
    try {
      sends.drain();
    } catch (RuntimeException e) {
      return fatal("posting sends failed: " + e.getMessage());
    }
    return Behaviors.same();
  }

  private Behavior<Command> cmEvent(CmEvent e) {
    if (e.id() != id) return Behaviors.same();
    if (e.type() == CmEventType.MULTICAST_JOIN && !joined) {
      UdParameters ud = e.ud();
      if (ud == null || ud.addressVector() == null) {
        return failed("MULTICAST_JOIN carried no address vector");
      }
      group = new UdTarget(ud.addressVector(), ud.qpNum(), ud.qkey());
      joined = true;
      lineage.joined = true;
      lineage.handler.tell(new Joined(ctx.getSelf(), lineage.group, ud.addressVector().dgid(),
          res.mtu));
      for (SendPath.PendingSend p : early) {
        sends.add(new SendPath.PendingSend(group, p.data(), p.replyTo(), p.to()));
      }
      early.clear();
      return drain();
    }
    if (e.type() == CmEventType.MULTICAST_ERROR) {
      return joined ? fatal(e.outcome()) : failed(e.outcome());
    }
    if (e.type() == CmEventType.DEVICE_REMOVAL) {
      return fatal("its device was removed (DEVICE_REMOVAL)");
    }
    ctx.getLog().debug("multicast member of {}: {}", lineage.group, e);
    return Behaviors.same();
  }

  private Behavior<Command> completions(Completions c) {
    if (c.incarnation() != incarnation) return Behaviors.same();
    String failed = c.batch().sortInto(core, sends, (gid, qpn) -> new Peer(gid, qpn, null),
        lineage.subscriber::tell);
    if (failed != null) return fatal(failed);
    try {
      res.flushReceives();
    } catch (RuntimeException e) {
      return fatal("posting receives failed: " + e.getMessage());
    }
    return drain();
  }

  /** Leaves the group (if joined), then frees everything in order. */
  private void freeAll() {
    String reason = "the multicast member of " + SocketAddresses.format(lineage.group) + " stopped";
    for (SendPath.PendingSend p : early) SendPath.answer(p, reason);
    early.clear();
    if (sends != null) sends.failAll(reason);
    if (joined) {
      try {
        id.leaveMulticast(lineage.group);
      } catch (RuntimeException e) {
        ctx.getLog().debug("leaving {} failed: {}", lineage.group, e.getMessage());
      }
      joined = false;
    }
    if (core != null) core.close();
    res = null;
    if (id != null) cm.destroy(id, false);
    id = null;
  }
}
