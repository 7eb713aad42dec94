package dev.pekkordma.cluster;

import dev.pekkordma.actors.ConnectionActor;
import dev.pekkordma.actors.DeviceActor;
import dev.pekkordma.actors.ListenerActor;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.cluster.PeerEvent.Reason;
import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.verbs.RdmaDevice;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;
import org.apache.pekko.pattern.StatusReply;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/**
 * One per member: binds the CM listener, advertises this member's {@link Endpoint} through the
 * Receptionist, asks every other member for its own, follows membership and reachability, and
 * keeps a {@link Link} per member incarnation. It decides who may connect: a member is refused
 * when its endpoint cannot talk to ours or is advertised by another member too; otherwise the
 * one with the lower address connects and the other accepts.
 */
final class Coordinator {
  private Coordinator() {}

  interface Command {}

  record Send(Address to, int channel, ByteString payload, CompletableFuture<Done> promise)
      implements Command {}

  record SubscribeEvents(ActorRef<PeerEvent> subscriber) implements Command {}

  record UnsubscribeEvents(ActorRef<PeerEvent> subscriber) implements Command {}

  /** Forget a channel subscriber when it stops. */
  record Watch(ActorRef<?> subscriber) implements Command {}

  /** From a link: publish. */
  record Report(UniqueAddress peer, PeerEvent event) implements Command {}

  private record ListenerEvent(ListenerActor.Event event) implements Command {}

  private record DeviceInfoArrived(StatusReply<DeviceActor.DeviceInfo> reply) implements Command {}

  private record MemberChanged(ClusterEvent.MemberEvent event) implements Command {}

  private record ReachabilityChanged(ClusterEvent.ReachabilityEvent event) implements Command {}

  private record ListingArrived(Receptionist.Listing listing) implements Command {}

  private record Described(ActorRef<Protocol.Request> ref, Endpoint endpoint, Throwable failure,
      int attempt) implements Command {}

  private record PendingExpired(long uid, ActorRef<ConnectionActor.Command> connection)
      implements Command {}

  private record LinkStopped(UniqueAddress peer) implements Command {}

  private record Gone(ActorRef<?> subscriber) implements Command {}

  private record StreamsBound(ServerBinding binding, Throwable failure) implements Command {}

  static Behavior<Command> create(ClusterSettings settings, Channels channels,
      Directory directory, CompletableFuture<Endpoint> selfEndpoint) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(
        timers -> new State(ctx, timers, settings, channels, directory, selfEndpoint)
            .behavior()));
  }

  /** Which side connects: the member with the lower address (then uid). */
  static int compare(UniqueAddress a, UniqueAddress b) {
    int c = Member.addressOrdering().compare(a.address(), b.address());
    return c != 0 ? c : Long.compare(a.longUid(), b.longUid());
  }

  /** What is known of one member incarnation. */
  private static final class KnownMember {
    final UniqueAddress address;
    boolean member; // seen in a membership event
    boolean up;
    boolean reachable = true;
    boolean removed;
    String closed; // why its link closed (downed, removed): no new one
    Endpoint endpoint;
    ActorRef<Protocol.Request> protocol;
    Reason refusedFor;
    String refusal;
    boolean accepted; // the link was told it may connect
    ActorRef<Link.Command> link;

    KnownMember(UniqueAddress address) {
      this.address = address;
    }
  }

  private static final class State {
    private final ActorContext<Command> ctx;
    private final TimerScheduler<Command> timers;
    private final ClusterSettings settings;
    private final Channels channels;
    private final Directory directory;
    private final CompletableFuture<Endpoint> selfEndpoint;
    private final RdmaExtension rdma;
    private final UniqueAddress self;
    private final Map<UniqueAddress, KnownMember> peers = new LinkedHashMap<>();
    private final Set<Long> removedUids = new HashSet<>();
    private final Set<ActorRef<Protocol.Request>> listed = new HashSet<>();
    /** Members that registered an endpoint and never described it. */
    private final Map<Address, String> silent = new HashMap<>();
    private final PendingRequests<ActorRef<ConnectionActor.Command>> pending =
        new PendingRequests<>();
    private final Set<ActorRef<PeerEvent>> subscribers = new HashSet<>();
    private final Set<ActorRef<?>> watched = new HashSet<>();
    private InetSocketAddress bound;
    private int streamPort = -1; // not bound yet; 0: no streams
    private ServerBinding streams;
    private DeviceActor.DeviceInfo device;
    private Endpoint endpoint;
    private String notListening;
    private int links;

    State(ActorContext<Command> ctx, TimerScheduler<Command> timers, ClusterSettings settings,
        Channels channels, Directory directory, CompletableFuture<Endpoint> selfEndpoint) {
      this.ctx = ctx;
      this.timers = timers;
      this.settings = settings;
      this.channels = channels;
      this.directory = directory;
      this.selfEndpoint = selfEndpoint;
      this.rdma = RdmaExtension.get(ctx.getSystem());
      Cluster cluster = Cluster.get(ctx.getSystem());
      this.self = cluster.selfMember().uniqueAddress();
      String host = settings.bindHost.isEmpty()
          ? self.address().getHost().orElse("127.0.0.1") : settings.bindHost;
      rdma.cm().tell(new dev.pekkordma.actors.CmActor.Listen(
          new InetSocketAddress(host, settings.bindPort), LinkQp.spec(settings),
          ctx.messageAdapter(ListenerActor.Event.class, ListenerEvent::new)));
      rdma.device().tell(new DeviceActor.GetInfo(infoReplies(ctx)));
      if (settings.streams) {
        Materializer mat = Materializer.matFromSystem(ctx.getSystem());
        org.slf4j.Logger log = ctx.getLog();
        ctx.pipeToSelf(RdmaStreams.get(ctx.getSystem()).bind(host, 0)
            .to(Sink.foreach(c -> c.handleWith(Streams.incoming(c, channels, directory, log),
                mat)))
            .run(mat), StreamsBound::new);
      } else {
        streamPort = 0;
      }
      cluster.subscriptions().tell(Subscribe.create(
          ctx.messageAdapter(ClusterEvent.MemberEvent.class, MemberChanged::new),
          ClusterEvent.MemberEvent.class));
      cluster.subscriptions().tell(Subscribe.create(
          ctx.messageAdapter(ClusterEvent.ReachabilityEvent.class, ReachabilityChanged::new),
          ClusterEvent.ReachabilityEvent.class));
      ctx.getSystem().receptionist().tell(Receptionist.subscribe(Protocol.KEY,
          ctx.messageAdapter(Receptionist.Listing.class, ListingArrived::new)));
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ActorRef<StatusReply<DeviceActor.DeviceInfo>> infoReplies(
        ActorContext<Command> ctx) {
      // a class literal cannot carry StatusReply's type argument
      return (ActorRef) ctx.messageAdapter(StatusReply.class,
          r -> new DeviceInfoArrived((StatusReply) r));
    }

    Behavior<Command> behavior() {
      return Behaviors.receive(Command.class)
          .onMessage(Send.class, this::send)
          .onMessage(SubscribeEvents.class, s -> {
            subscribers.add(s.subscriber());
            watch(s.subscriber());
            return Behaviors.same();
          })
          .onMessage(UnsubscribeEvents.class, s -> {
            subscribers.remove(s.subscriber());
            return Behaviors.same();
          })
          .onMessage(Watch.class, w -> {
            watch(w.subscriber());
            return Behaviors.same();
          })
          .onMessage(Gone.class, g -> {
            subscribers.remove(g.subscriber());
            channels.unsubscribe(g.subscriber());
            watched.remove(g.subscriber());
            return Behaviors.same();
          })
          .onMessage(Report.class, r -> {
            publish(r.event());
            return Behaviors.same();
          })
          .onMessage(ListenerEvent.class, e -> listenerEvent(e.event()))
          .onMessage(StreamsBound.class, b -> {
            if (b.failure() != null) {
              ctx.getLog().error("this member's RDMA streams listener could not bind ({}); "
                  + "channels carry messages, but no streams to it", b.failure().getMessage());
              streamPort = 0;
            } else {
              streams = b.binding();
              streamPort = b.binding().localAddress().getPort();
            }
            ready();
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            if (streams != null) streams.unbind();
            return Behaviors.same();
          })
          .onMessage(DeviceInfoArrived.class, this::deviceInfo)
          .onMessage(MemberChanged.class, m -> memberEvent(m.event()))
          .onMessage(ReachabilityChanged.class, r -> reachability(r.event()))
          .onMessage(ListingArrived.class, this::listing)
          .onMessage(Described.class, this::described)
          .onMessage(PendingExpired.class, this::pendingExpired)
          .onMessage(LinkStopped.class, this::linkStopped)
          .onMessage(Protocol.Describe.class, d -> {
            // before the endpoint is known this member has not registered: nobody asks
            if (endpoint != null) d.replyTo().tell(endpoint);
            return Behaviors.same();
          })
          .onMessage(Protocol.ConnectToMe.class, c -> {
            KnownMember p = byUid(c.uid());
            if (p != null && p.link != null) p.link.tell(Link.Demand.INSTANCE);
            return Behaviors.same();
          })
          .build();
    }

    private void watch(ActorRef<?> subscriber) {
      if (watched.add(subscriber)) ctx.watchWith(subscriber, new Gone(subscriber));
    }

    // -------------------------------------------------------------- this member's endpoint

    private Behavior<Command> listenerEvent(ListenerActor.Event e) {
      if (e instanceof ListenerActor.Bound b) {
        bound = b.address();
        ready();
      } else if (e instanceof ListenerActor.BindFailed f) {
        notListening = "this member's RDMA listener could not bind " + f.address() + ": "
            + f.reason();
        ctx.getLog().error("{}; no RDMA connections", notListening);
        selfEndpoint.completeExceptionally(new IllegalStateException(notListening));
      } else if (e instanceof ListenerActor.Unbound u) {
        // its connections live on; only new ones from members with higher addresses cannot come
        ctx.getLog().error("this member's RDMA listener on {} stopped ({}): members that connect "
            + "to this one can no longer do so", u.address(), u.reason());
      } else if (e instanceof ListenerActor.ConnectionRequested r) {
        requested(r.connection(), r.privateData(), r.remote());
      }
      return Behaviors.same();
    }

    private Behavior<Command> deviceInfo(DeviceInfoArrived d) {
      if (d.reply().isError()) {
        notListening = "the RDMA device could not be queried: " + d.reply().getError().getMessage();
        ctx.getLog().error("{}; no RDMA connections", notListening);
        selfEndpoint.completeExceptionally(new IllegalStateException(notListening));
        return Behaviors.same();
      }
      device = d.reply().getValue();
      ready();
      return Behaviors.same();
    }

    /** Bound and the device known: advertise. */
    private void ready() {
      if (bound == null || device == null || streamPort < 0 || endpoint != null
          || notListening != null) {
        return;
      }
      String transport = rdma.provider().devices().stream()
          .filter(x -> x.name().equals(device.name())).map(RdmaDevice::transport).findFirst()
          .orElse("unknown");
      String host = !settings.advertiseHost.isEmpty() ? settings.advertiseHost
          : bound.getAddress().getHostAddress();
      int port = settings.advertisePort != 0 ? settings.advertisePort : bound.getPort();
      endpoint = new Endpoint(self.address(), self.longUid(), host, port, streamPort,
          rdma.provider().name(),
          transport, device.port().linkLayer().name(), device.attributes().maxQpWr(),
          rdma.settings().bufferSize, Endpoint.VERSION);
      ctx.getLog().info("RDMA endpoint of {}: {} ({} provider, {}, bound {})", self.address(),
          endpoint.cmAddress(), endpoint.provider(), transport, bound);
      ctx.getSystem().receptionist().tell(Receptionist.register(Protocol.KEY,
          ctx.getSelf().<Protocol.Request>narrow()));
      selfEndpoint.complete(endpoint);
      evaluateAll();
    }

    // -------------------------------------------------------------- the other members

    private Behavior<Command> listing(ListingArrived l) {
      Set<ActorRef<Protocol.Request>> now = l.listing().getServiceInstances(Protocol.KEY);
      listed.retainAll(now);
      for (ActorRef<Protocol.Request> ref : now) {
        if (ref.path().address().hasLocalScope() || ref.path().address().equals(self.address())) {
          continue;
        }
        if (listed.add(ref)) describe(ref, 1);
      }
      return Behaviors.same();
    }

    private void describe(ActorRef<Protocol.Request> ref, int attempt) {
      ctx.ask(Endpoint.class, ref, settings.describeTimeout, Protocol.Describe::new,
          (e, t) -> new Described(ref, e, t, attempt));
    }

    private Behavior<Command> described(Described d) {
      Address address = d.ref().path().address();
      if (!listed.contains(d.ref())) return Behaviors.same(); // gone meanwhile
      if (d.failure() != null) {
        if (d.attempt() < settings.describeAttempts) {
          describe(d.ref(), d.attempt() + 1);
        } else {
          String detail = address + " registered an RDMA endpoint but did not describe it ("
              + d.attempt() + " asks, " + ClusterSettings.show(settings.describeTimeout) + " each)";
          silent.put(address, detail);
          for (KnownMember p : peers.values()) {
            if (!p.removed && p.endpoint == null && p.address.address().equals(address)) {
              evaluate(p);
            }
          }
        }
        return Behaviors.same();
      }
      Endpoint e = d.endpoint();
      if (!e.member().equals(address)) {
        ctx.getLog().warn("{} describes an endpoint of {}; ignored", address, e.member());
        return Behaviors.same();
      }
      if (removedUids.contains(e.uid())) return Behaviors.same();
      silent.remove(address);
      KnownMember p = peer(new UniqueAddress(e.member(), e.uid()));
      p.endpoint = e;
      p.protocol = d.ref();
      ctx.getLog().debug("{} advertises RDMA endpoint {}", e.member(), e.cmAddress());
      evaluateAll();
      return Behaviors.same();
    }

    private Behavior<Command> memberEvent(ClusterEvent.MemberEvent e) {
      Member m = e.member();
      if (m.uniqueAddress().equals(self)) {
        if (e instanceof ClusterEvent.MemberRemoved || e instanceof ClusterEvent.MemberDowned) {
          String why = e instanceof ClusterEvent.MemberDowned ? "this member was downed"
              : "this member left the cluster";
          for (KnownMember p : peers.values()) close(p, why);
        }
        return Behaviors.same();
      }
      if (e instanceof ClusterEvent.MemberRemoved) {
        removed(m);
        return Behaviors.same();
      }
      if (e instanceof ClusterEvent.MemberDowned) {
        // it will be removed; it is dead to the cluster already, so its resources go now
        KnownMember p = peers.get(m.uniqueAddress());
        if (p != null) close(p, m.address() + " was downed");
        return Behaviors.same();
      }
      if (removedUids.contains(m.uniqueAddress().longUid())) return Behaviors.same();
      boolean known = peers.containsKey(m.uniqueAddress());
      KnownMember p = peer(m.uniqueAddress());
      p.member = true;
      boolean wasUp = p.up;
      p.up |= m.status() == MemberStatus.up() || m.status() == MemberStatus.weaklyUp();
      if (p.link == null) {
        ensureLink(p); // tells it what is known so far
      } else if (p.up && !wasUp) {
        p.link.tell(Link.Up.INSTANCE);
      }
      if (!known) evaluate(p);
      return Behaviors.same();
    }

    private void removed(Member m) {
      removedUids.add(m.uniqueAddress().longUid());
      listed.removeIf(r -> r.path().address().equals(m.address()));
      KnownMember p = peers.get(m.uniqueAddress());
      if (p != null) {
        p.removed = true;
        close(p, m.address() + " was removed from the cluster");
        if (p.link == null) peers.remove(p.address);
        // now, in the cluster's order: a new incarnation of the address comes after this
        publish(new PeerEvent.Removed(m.address()));
      }
      if (peers.values().stream().noneMatch(x -> x.address.address().equals(m.address()))) {
        silent.remove(m.address());
      }
      evaluateAll(); // a conflict may have gone with it
    }

    /** The link closes; messages for the member fail with {@code why} from now on. */
    private void close(KnownMember p, String why) {
      if (p.closed != null) return;
      p.closed = why;
      directory.forget(p.address.address(), p.address.longUid(), why);
      if (p.link != null) p.link.tell(new Link.Close(why));
    }

    private Behavior<Command> reachability(ClusterEvent.ReachabilityEvent e) {
      KnownMember p = peers.get(e.member().uniqueAddress());
      if (p == null || p.removed) return Behaviors.same();
      boolean reachable = e instanceof ClusterEvent.ReachableMember;
      if (p.reachable == reachable) return Behaviors.same();
      p.reachable = reachable;
      directory.reachable(p.address.address(), p.address.longUid(), reachable);
      if (p.link != null) p.link.tell(new Link.Reachability(reachable));
      ctx.getLog().info("{} is {}: RDMA traffic to it {}", p.address.address(),
          reachable ? "reachable again" : "unreachable", reachable ? "resumes" : "pauses");
      publish(reachable ? new PeerEvent.Resumed(p.address.address())
          : new PeerEvent.Paused(p.address.address()));
      return Behaviors.same();
    }

    private KnownMember peer(UniqueAddress address) {
      return peers.computeIfAbsent(address, KnownMember::new);
    }

    private KnownMember byUid(long uid) {
      for (KnownMember p : peers.values()) {
        if (!p.removed && p.address.longUid() == uid) return p;
      }
      return null;
    }

    private void ensureLink(KnownMember p) {
      if (p.link != null || p.removed || p.closed != null) return;
      Link.LinkSpec spec =
          new Link.LinkSpec(
              self,
              p.address,
              compare(self, p.address) < 0,
              settings,
              rdma.settings().bufferSize,
              rdma.settings().disconnectTimeout,
              rdma.cm(),
              ctx.getSelf(),
              channels);
      p.link = ctx.spawn(Link.create(spec), "link-" + (++links));
      ctx.watchWith(p.link, new LinkStopped(p.address));
      if (p.up) p.link.tell(Link.Up.INSTANCE);
      if (!p.reachable) p.link.tell(new Link.Reachability(false));
      if (p.refusal != null) p.link.tell(new Link.Refuse(p.refusedFor, p.refusal));
      if (p.accepted) p.link.tell(new Link.Accepted(p.endpoint, p.protocol));
    }

    private Behavior<Command> linkStopped(LinkStopped s) {
      KnownMember p = peers.get(s.peer());
      if (p == null) return Behaviors.same();
      if (p.closed != null) {
        if (p.removed) peers.remove(s.peer());
        p.link = null;
        ctx.getLog().info("RDMA link to removed {} closed: its connection and buffers are "
            + "released, every message to it is reported", s.peer().address());
      } else {
        ctx.getLog().error("the RDMA link to {} stopped unexpectedly; the next message makes "
            + "another", s.peer().address());
        p.link = null; // what it knew stays in p, for the next link
      }
      return Behaviors.same();
    }

    // -------------------------------------------------------------- who may connect

    private void evaluateAll() {
      for (KnownMember p : new ArrayList<>(peers.values())) {
        if (!p.removed) evaluate(p);
      }
    }

    /** Works out whether the member is refused, and tells its link when that changes. */
    private void evaluate(KnownMember p) {
      Reason reason = null;
      String detail = null;
      Address a = p.address.address();
      if (p.endpoint == null) {
        if (silent.containsKey(a)) {
          reason = Reason.NO_ANSWER;
          detail = silent.get(a);
        }
      } else {
        String why = endpoint == null ? null : endpoint.incompatibility(p.endpoint);
        if (why != null) {
          reason = Reason.INCOMPATIBLE;
          detail = a + " cannot be reached over RDMA: " + why;
        } else {
          List<String> others = new ArrayList<>();
          if (endpoint != null && endpoint.cmAddress().equals(p.endpoint.cmAddress())) {
            others.add("this member (" + self.address() + ")");
          }
          for (KnownMember o : peers.values()) {
            if (o != p && !o.removed && o.endpoint != null && !o.address.address().equals(a)
                && o.endpoint.cmAddress().equals(p.endpoint.cmAddress())) {
              others.add(o.address.address().toString());
            }
          }
          if (!others.isEmpty()) {
            reason = Reason.ENDPOINT_CONFLICT;
            detail = a + " advertises RDMA endpoint " + p.endpoint.cmAddress() + ", as does "
                + String.join(" and ", others) + "; none of them is connected to (check "
                + ClusterSettings.ROOT + ".advertise-host/-port)";
          }
        }
      }
      if (!Objects.equals(detail, p.refusal)) {
        p.refusedFor = reason;
        p.refusal = detail;
        if (detail != null) {
          p.accepted = false;
          directory.forget(a, p.address.longUid(), detail);
          if (p.link != null) p.link.tell(new Link.Refuse(reason, detail));
          refused(a, reason, detail);
          rejectPending(p.address.longUid(), detail);
        } else {
          ctx.getLog().info("{} is no longer refused", a);
        }
      }
      if (detail == null && p.endpoint != null && !p.accepted && p.closed == null) {
        p.accepted = true;
        directory.accept(p.endpoint, p.reachable);
        if (p.link != null) {
          p.link.tell(new Link.Accepted(p.endpoint, p.protocol));
        } else if (p.member) {
          ensureLink(p);
        }
        for (ActorRef<ConnectionActor.Command> c : pending.take(p.address.longUid())) {
          timers.cancel(c);
          route(p, c);
        }
      }
    }

    private void refused(Address a, Reason reason, String detail) {
      ctx.getLog().error("RDMA refused for {} ({}): {}", a, reason, detail);
      publish(new PeerEvent.Refused(a, reason, detail));
    }

    // -------------------------------------------------------------- connection requests

    private void requested(ActorRef<ConnectionActor.Command> connection, byte[] data,
        InetSocketAddress remote) {
      Long uid = ConnectPrivateData.uid(data);
      if (uid == null) {
        ctx.getLog().warn("a connection request from {} is not from a pekko-rdma cluster member "
            + "(or speaks another version); rejected", remote);
        reject(connection, "not a pekko-rdma cluster connection of version " + Endpoint.VERSION);
        return;
      }
      KnownMember p = byUid(uid);
      if (p != null && p.refusal != null) {
        reject(connection, p.refusal);
      } else if (p != null && p.accepted) {
        route(p, connection);
      } else {
        // its endpoint may not have reached us yet: hold the request a while
        String why = pending.hold(uid, connection);
        if (why == null) {
          timers.startSingleTimer(connection, new PendingExpired(uid, connection),
              settings.pendingRequestTimeout);
          return;
        }
        if (PendingRequests.worthLogging(pending.refused())) {
          ctx.getLog().warn("rejecting a connection request from {} naming uid {}: {} ({} so "
              + "rejected)", remote, uid, why, pending.refused());
        }
        reject(connection, why);
      }
    }

    private void route(KnownMember p, ActorRef<ConnectionActor.Command> connection) {
      if (compare(self, p.address) < 0) {
        reject(connection, "crossed connection: " + self.address() + " connects to "
            + p.address.address() + ", not the other way");
        return;
      }
      ensureLink(p);
      if (p.link == null) {
        reject(connection, p.closed);
        return;
      }
      p.link.tell(new Link.Incoming(connection));
    }

    private Behavior<Command> pendingExpired(PendingExpired e) {
      if (!pending.expire(e.uid(), e.connection())) return Behaviors.same();
      String why = "no member with uid " + e.uid() + " has described its endpoint to "
          + self.address() + " within " + ClusterSettings.show(settings.pendingRequestTimeout);
      ctx.getLog().warn("rejecting an RDMA connection request: {}", why);
      reject(e.connection(), why);
      return Behaviors.same();
    }

    private void rejectPending(long uid, String why) {
      for (ActorRef<ConnectionActor.Command> c : pending.take(uid)) {
        timers.cancel(c);
        reject(c, why);
      }
    }

    private static void reject(ActorRef<ConnectionActor.Command> c, String why) {
      c.tell(new ConnectionActor.Reject(ConnectPrivateData.rejection(why)));
    }

    // -------------------------------------------------------------- messages

    private Behavior<Command> send(Send s) {
      String why = null;
      KnownMember target = null;
      if (s.to().equals(self.address())) {
        why = "it is this member; channels carry messages between members";
      } else if (notListening != null) {
        why = notListening;
      } else {
        for (KnownMember p : peers.values()) {
          // of two incarnations of the address, the one that is not going
          if (!p.removed && p.address.address().equals(s.to()) && (target == null
              || target.closed != null && p.closed == null || p.member && !target.member)) {
            target = p;
          }
        }
        if (target == null) {
          why = silent.getOrDefault(s.to(), "it is not a member of the cluster");
        }
      }
      if (why == null && target.closed != null) why = target.closed;
      if (why != null) {
        s.promise().completeExceptionally(new SendFailedException(s.to(), why));
        return Behaviors.same();
      }
      ensureLink(target);
      target.link.tell(new Link.Send(s.channel(), s.payload(), s.promise()));
      return Behaviors.same();
    }

    private void publish(PeerEvent e) {
      for (ActorRef<PeerEvent> s : subscribers) s.tell(e);
    }
  }
}
