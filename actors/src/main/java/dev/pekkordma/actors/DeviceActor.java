package dev.pekkordma.actors;

import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.AgentRunner;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.ProtectionDomain;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.pattern.StatusReply;

/**
 * Owns one device context and, as its children, the device's PD actors (and through them its
 * QPs) and its async event reader; the context's completion hub polls the QPs' CQs. Port and device events go to the
 * subscribers. On a fatal device error it stops its children (QPs, PDs, pollers: everything of
 * the device, leaf first), closes the context, and opens the device again with backoff.
 */
public final class DeviceActor {
  private DeviceActor() {}

  public sealed interface Command {}

  /** Allocate a PD; the reply is its actor, a child of this one. */
  public record AllocatePd(ActorRef<StatusReply<ActorRef<PdActor.Command>>> replyTo)
      implements Command {}

  public record GetInfo(ActorRef<StatusReply<DeviceInfo>> replyTo) implements Command {}

  /** Hear the device's port and device events; a subscriber that stops is dropped. */
  public record Subscribe(ActorRef<DeviceEvent> subscriber) implements Command {}

  public record Unsubscribe(ActorRef<DeviceEvent> subscriber) implements Command {}

  /** An async event of the device itself (port, device, SRQ), from the event reader. */
  record Raised(AsyncEvent event) implements Command {}

  /** Treat the device as failed (the CM saw it removed, say). */
  record Fail(String reason) implements Command {}

  /** Put a connection on this device, in its connections' PD (CM devices). */
  record SpawnConnection(ConnectionActor.ConnectionSpec spec) implements Command {}

  /** The CM actor has forgotten this device: nothing more will be sent to it. */
  record Retired() implements Command {}

  /** The connections' PD has no connection left, after making {@code made} in all. */
  record ConnectionsIdle(int made) implements Command {}

  private record IdleTimeout(int made) implements Command {}

  /** Retired: have the connections' buffers a program held all come back? */
  private record BuffersBack() implements Command {}

  private record Reopen(int attempt) implements Command {}

  private record ChildStopped(ActorRef<?> child) implements Command {}

  private record SubscriberGone(ActorRef<DeviceEvent> subscriber) implements Command {}

  public record DeviceInfo(String name, DeviceAttributes attributes, PortAttributes port,
      Gid gid) {}

  public sealed interface DeviceEvent {
    String device();
  }

  /** PORT_ACTIVE, PORT_ERR and the port's other events. */
  public record PortChanged(String device, int port, AsyncEventType type) implements DeviceEvent {}

  /** Any other event not owned by a QP or CQ (an SRQ's, say). */
  public record DeviceEventReceived(String device, AsyncEventType type, String description)
      implements DeviceEvent {}

  /** The device failed; its actors are stopping and it will be opened again. */
  public record DeviceFailed(String device, String reason) implements DeviceEvent {}

  public record DeviceReopened(String device, int attempt) implements DeviceEvent {}

  public record ReopenFailed(String device, int attempt, String reason, Duration retryIn)
      implements DeviceEvent {}

  /** A device opened by name, reopened with backoff after a failure. */
  static Behavior<Command> create(ContextSource source, RdmaRuntime runtime,
      RdmaActorsSettings settings) {
    return create(source, runtime, settings, null);
  }

  /**
   * With {@code cm}: a device context the CM handed out. It is not reopened after a failure (new
   * ids bring their own context): once its actors stopped, the CM actor forgets it, then it stops.
   */
  static Behavior<Command> create(ContextSource source, RdmaRuntime runtime,
      RdmaActorsSettings settings, ActorRef<CmActor.Command> cm) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(
        timers -> new State(ctx, timers, source, runtime, settings, cm).start()));
  }

  private static final class State {
    private final ActorContext<Command> ctx;
    private final TimerScheduler<Command> timers;
    private final ContextSource source;
    private final RdmaActorsSettings settings;
    private final RdmaRuntime runtime;
    private final ActorRef<CmActor.Command> cm;
    private ActorRef<PdActor.Command> connectionsPd;
    private BufferPool connectionsPool;
    private int connectionsMade;
    private int retiredAt = -1; // connectionsMade when the CM actor was asked to forget us
    private final Set<ActorRef<DeviceEvent>> subscribers = new LinkedHashSet<>();
    private final Set<ActorRef<?>> children = new LinkedHashSet<>();
    private DeviceSession session;
    private Runnable release;
    private ActorRef<?> reader;
    private String failure;
    private boolean closing;
    private int generation;
    private int pds;

    State(ActorContext<Command> ctx, TimerScheduler<Command> timers, ContextSource source,
        RdmaRuntime runtime, RdmaActorsSettings settings, ActorRef<CmActor.Command> cm) {
      this.ctx = ctx;
      this.timers = timers;
      this.source = source;
      this.settings = settings;
      this.cm = cm;
      this.runtime = runtime;
    }

    Behavior<Command> start() {
      try {
        open();
        return opened();
      } catch (RuntimeException e) {
        failure = "opening failed: " + e.getMessage();
        ctx.getLog().error("{}: {}", source.name(), failure);
        return cm != null ? retire() : retryLater(1, failure);
      }
    }

    private void open() {
      ContextSource.OpenedContext o = source.open();
      DeviceSession s = null;
      try {
        // a dead device still opens; find that out now rather than at the first PD
        o.context().allocPd().close();
        s = new DeviceSession(source.name(), o.context(), settings, ctx.getSelf(), runtime);
        generation++;
        AgentRunner r = AgentRunner.spawn(ctx, "events-" + generation,
            "events-" + source.name() + "-" + generation,
            runtime.settings().newIdleStrategy(),
            new AsyncEventReader(s));
        watch(r.ref());
        reader = r.ref();
      } catch (RuntimeException e) {
        for (ActorRef<?> c : children) ctx.stop(c);
        if (s != null) s.close(ctx.getLog());
        o.release().run();
        throw e;
      }
      session = s;
      release = o.release();
    }

    private void watch(ActorRef<?> child) {
      children.add(child);
      ctx.watchWith(child, new ChildStopped(child));
    }

    // -------------------------------------------------------------- open

    private Behavior<Command> opened() {
      return common()
          .onMessage(AllocatePd.class, this::allocatePd)
          .onMessage(SpawnConnection.class, this::spawnConnection)
          .onMessage(ConnectionsIdle.class, this::connectionsIdle)
          .onMessage(IdleTimeout.class, t -> {
            if (t.made() == connectionsMade && retiredAt < 0) {
              retiredAt = connectionsMade;
              cm.tell(new CmActor.Retire(ctx.getSelf()));
            }
            return Behaviors.same();
          })
          .onMessage(Retired.class, r -> retiredAt == connectionsMade
              ? closeWhenBuffersBack() : Behaviors.same())
          .onMessage(BuffersBack.class, b -> retiredAt == connectionsMade
              ? closeWhenBuffersBack() : Behaviors.same())
          .onMessage(GetInfo.class, this::info)
          .onMessage(Raised.class, r -> raised(r.event()))
          .onMessage(Fail.class, f -> fail(f.reason()))
          .onMessage(ChildStopped.class, c -> {
            children.remove(c.child());
            if (c.child().equals(connectionsPd)) {
              connectionsPd = null;
              connectionsPool = null;
            }
            if (c.child().equals(reader)) return fail("its event reader stopped");
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            closeSession();
            return Behaviors.same();
          })
          .build();
    }

    private Behavior<Command> allocatePd(AllocatePd a) {
      try {
        a.replyTo().tell(StatusReply.success(newPd().actor()));
      } catch (RuntimeException e) {
        a.replyTo().tell(StatusReply.error("allocating a PD on " + source.name() + " failed: "
            + e.getMessage()));
      }
      return Behaviors.same();
    }

    private record Pd(ActorRef<PdActor.Command> actor, BufferPool pool) {}

    /** A PD, its buffer pool (registered now, once) and its actor. */
    private Pd newPd() {
      String name = source.name() + "/pd-" + (pds + 1);
      MemoryBudget.Reservation bytes = session.memory().reserve(
          (long) settings.slabSize * settings.slabs, "the buffer pool of " + name,
          "pekko-rdma.actors.buffer-pool.slab-size or .slabs");
      ProtectionDomain pd;
      try {
        pd = session.context.allocPd();
      } catch (RuntimeException e) {
        bytes.close();
        throw e;
      }
      try {
        BufferPool pool = new BufferPool(name, pd, settings.bufferSize, settings.slabSize,
            settings.slabs, bytes);
        ActorRef<PdActor.Command> ref =
            ctx.spawn(PdActor.create(session, pd, pool), "pd-" + (++pds));
        watch(ref);
        return new Pd(ref, pool);
      } catch (RuntimeException e) {
        bytes.close(); // once: a pool that failed to register closed it already
        try {
          pd.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    }

    /** Connections share one PD (and its pool) per device. */
    private Behavior<Command> spawnConnection(SpawnConnection s) {
      try {
        if (connectionsPd == null) {
          Pd made = newPd();
          connectionsPd = made.actor();
          connectionsPool = made.pool();
        }
      } catch (RuntimeException e) {
        s.spec().abandon("no PD on " + source.name() + ": " + e.getMessage(), ctx.getLog());
        return Behaviors.same();
      }
      connectionsPd.tell(new PdActor.SpawnConnection(s.spec()));
      connectionsMade++;
      return Behaviors.same();
    }

    /**
     * A CM device without connections lets go of its context after the idle timeout, so that
     * the CM can close it: the CM actor forgets the device first (spawns already on their way
     * still arrive), and if none came meanwhile the device closes. Else it closes after them.
     */
    private Behavior<Command> connectionsIdle(ConnectionsIdle i) {
      if (i.made() != connectionsMade) return Behaviors.same(); // one is on its way
      if (retiredAt >= 0) return closeWhenBuffersBack();
      timers.startSingleTimer(new IdleTimeout(connectionsMade), settings.cmDeviceIdleTimeout);
      return Behaviors.same();
    }

    /**
     * A buffer a connection handed the program (a receive's, a read's) is the program's until
     * it releases it, after the connection too: the pool, and so the context, wait for them all.
     */
    private Behavior<Command> closeWhenBuffersBack() {
      if (connectionsPool == null || connectionsPool.leased() == 0) return close();
      timers.startSingleTimer(new BuffersBack(), settings.cmDeviceIdleTimeout);
      return Behaviors.same();
    }

    /** Stops the children, closes the session and stops, without reporting a failure. */
    private Behavior<Command> close() {
      closing = true;
      for (ActorRef<?> c : children) ctx.stop(c);
      return children.isEmpty() ? stopped() : stopping();
    }

    private Behavior<Command> info(GetInfo g) {
      try {
        g.replyTo().tell(StatusReply.success(new DeviceInfo(source.name(),
            session.context.queryDevice(), session.context.queryPort(1),
            session.context.queryGid(1, 0))));
      } catch (RuntimeException e) {
        g.replyTo().tell(StatusReply.error(e.getMessage()));
      }
      return Behaviors.same();
    }

    private Behavior<Command> raised(AsyncEvent e) {
      if (e.type() == AsyncEventType.DEVICE_FATAL) return fail("DEVICE_FATAL");
      DeviceEvent out = e.type().isPortEvent()
          ? new PortChanged(source.name(), e.port(), e.type())
          : new DeviceEventReceived(source.name(), e.type(), e.toString());
      publish(out);
      return Behaviors.same();
    }

    // -------------------------------------------------------------- failing and reopening

    private Behavior<Command> fail(String reason) {
      failure = reason;
      ctx.getLog().warn("{} failed: {}; stopping its actors{}", source.name(), reason,
          cm == null ? " and opening it again" : "");
      publish(new DeviceFailed(source.name(), reason));
      for (ActorRef<?> c : children) ctx.stop(c);
      return children.isEmpty() ? stopped() : stopping();
    }

    private Behavior<Command> stopping() {
      return down()
          .onMessage(ChildStopped.class, c -> {
            children.remove(c.child());
            return children.isEmpty() ? stopped() : Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            closeSession();
            return Behaviors.same();
          })
          .build();
    }

    /** Every child is gone: close the context and try again after the backoff. */
    private Behavior<Command> stopped() {
      closeSession();
      if (closing) return Behaviors.stopped();
      return cm != null ? retire() : retryLater(1, failure);
    }

    /** A CM device is not reopened: wait until the CM actor forgot it, then stop. */
    private Behavior<Command> retire() {
      cm.tell(new CmActor.Retire(ctx.getSelf()));
      return down()
          .onMessage(Retired.class, r -> Behaviors.stopped())
          .onMessage(ChildStopped.class, c -> {
            children.remove(c.child());
            return Behaviors.same();
          })
          .build();
    }

    private Behavior<Command> retryLater(int attempt, String reason) {
      Duration delay = settings.reopenBackoff.delay(attempt);
      if (attempt > 1) publish(new ReopenFailed(source.name(), attempt - 1, reason, delay));
      timers.startSingleTimer(new Reopen(attempt), delay);
      return down()
          .onMessage(Reopen.class, r -> reopen(r.attempt()))
          .onMessage(ChildStopped.class, c -> {
            children.remove(c.child());
            return Behaviors.same();
          })
          .build();
    }

    private Behavior<Command> reopen(int attempt) {
      try {
        open();
      } catch (RuntimeException e) {
        failure = e.getMessage();
        ctx.getLog().warn("{}: reopening (attempt {}) failed: {}", source.name(), attempt,
            failure);
        return retryLater(attempt + 1, failure);
      }
      ctx.getLog().info("{} reopened (attempt {})", source.name(), attempt);
      publish(new DeviceReopened(source.name(), attempt));
      return opened();
    }

    /** What a device that is not open answers. */
    private BehaviorBuilder<Command> down() {
      return common()
          .onMessage(SpawnConnection.class, c -> {
            c.spec().abandon(unavailable(), ctx.getLog());
            return Behaviors.same();
          })
          .onMessage(AllocatePd.class, a -> {
            a.replyTo().tell(StatusReply.error(unavailable()));
            return Behaviors.same();
          })
          .onMessage(GetInfo.class, g -> {
            g.replyTo().tell(StatusReply.error(unavailable()));
            return Behaviors.same();
          })
          .onMessage(Raised.class, r -> Behaviors.same()) // the old context's last words
          .onMessage(Fail.class, f -> Behaviors.same());
    }

    private String unavailable() {
      return source.name() + " is down (" + failure + ") and being opened again";
    }

    private BehaviorBuilder<Command> common() {
      return Behaviors.receive(Command.class)
          .onMessage(Subscribe.class, s -> {
            if (subscribers.add(s.subscriber())) {
              ctx.watchWith(s.subscriber(), new SubscriberGone(s.subscriber()));
            }
            return Behaviors.same();
          })
          .onMessage(Unsubscribe.class, u -> {
            if (subscribers.remove(u.subscriber())) ctx.unwatch(u.subscriber());
            return Behaviors.same();
          })
          .onMessage(SubscriberGone.class, g -> {
            subscribers.remove(g.subscriber());
            return Behaviors.same();
          });
    }

    private void publish(DeviceEvent e) {
      for (ActorRef<DeviceEvent> s : subscribers) s.tell(e);
    }

    /** After the children stopped: the hub (the CQs left, the channel), then the context. */
    private void closeSession() {
      if (session == null) return;
      session.close(ctx.getLog());
      try {
        release.run();
      } catch (RuntimeException e) {
        ctx.getLog().error("{}: closing the device context failed: {}", source.name(),
            e.getMessage());
      }
      session = null;
      release = null;
      reader = null;
    }
  }
}
