package dev.pekkordma.actors;

import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.pattern.StatusReply;

/**
 * Owns a protection domain, its memory registrations and its {@link BufferPool} (registered once
 * when the PD actor starts), and the QP actors made in it, which are its children: when it stops
 * they stop first, then the registrations go, then the PD.
 */
public final class PdActor {
  private PdActor() {}

  public sealed interface Command {}

  /** Make a QP actor in this PD; {@code owner} hears its state changes and events. */
  public record CreateQp(QpSpec spec, ActorRef<QpActor.Event> owner,
      ActorRef<StatusReply<ActorRef<QpActor.Command>>> replyTo) implements Command {}

  /** The PD's buffer pool. */
  public record GetPool(ActorRef<BufferPool> replyTo) implements Command {}

  /** Allocate {@code length} bytes off-heap and register them with {@code access}. */
  public record Register(int length, int access, ActorRef<StatusReply<Registration>> replyTo)
      implements Command {}

  public record Deregister(Registration registration, ActorRef<StatusReply<Done>> replyTo)
      implements Command {}

  /** A CM connection in this PD. */
  record SpawnConnection(ConnectionActor.ConnectionSpec spec) implements Command {}

  private enum ConnectionStopped implements Command { INSTANCE }

  /** Stop the PD actor: its QPs, registrations, pool and the PD itself go. */
  public enum Close implements Command { INSTANCE }

  /** Memory registered by {@link Register}: valid until deregistered or the PD actor stops. */
  public static final class Registration {
    private final OffHeapBuffer memory;
    private final MemoryRegion region;
    private final MemoryBudget.Reservation reservation;

    Registration(OffHeapBuffer memory, MemoryRegion region, MemoryBudget.Reservation reservation) {
      this.memory = memory;
      this.region = region;
      this.reservation = reservation;
    }

    /** Deregisters (which may fail, leaving all as it was), then frees the memory. */
    void free() {
      region.close();
      freeMemory();
    }

    /** Frees the memory and gives its bytes back to the budget. */
    void freeMemory() {
      memory.close();
      reservation.close();
    }

    public OffHeapBuffer memory() { return memory; }
    public long address() { return region.address(); }
    public long length() { return region.length(); }
    public int lkey() { return region.lkey(); }
    public int rkey() { return region.rkey(); }
  }

  static Behavior<Command> create(DeviceSession session, ProtectionDomain pd, BufferPool pool) {
    return Behaviors.setup(ctx -> new State(ctx, session, pd, pool).behavior());
  }

  private static final class State {
    private final ActorContext<Command> ctx;
    private final DeviceSession session;
    private final ProtectionDomain pd;
    private final BufferPool pool;
    private final Set<Registration> registrations = new LinkedHashSet<>();
    private int qps;
    private int connections;
    private int live;

    State(ActorContext<Command> ctx, DeviceSession session, ProtectionDomain pd, BufferPool pool) {
      this.ctx = ctx;
      this.session = session;
      this.pd = pd;
      this.pool = pool;
    }

    Behavior<Command> behavior() {
      return Behaviors.receive(Command.class)
          .onMessage(CreateQp.class, this::createQp)
          .onMessage(SpawnConnection.class, c -> {
            ActorRef<ConnectionActor.Command> conn = ctx.spawn(
                ConnectionActor.create(c.spec(), session, pd, pool),
                "connection-" + (++connections));
            ctx.watchWith(conn, ConnectionStopped.INSTANCE);
            live++;
            return Behaviors.same();
          })
          .onMessageEquals(ConnectionStopped.INSTANCE, () -> {
            if (--live == 0) session.device.tell(new DeviceActor.ConnectionsIdle(connections));
            return Behaviors.same();
          })
          .onMessage(GetPool.class, g -> {
            g.replyTo().tell(pool);
            return Behaviors.same();
          })
          .onMessage(Register.class, this::register)
          .onMessage(Deregister.class, this::deregister)
          .onMessageEquals(Close.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> {
            close();
            return Behaviors.same();
          })
          .build();
    }

    private Behavior<Command> createQp(CreateQp c) {
      ctx.spawn(QpActor.create(session, pd, c.spec(), c.owner(), c.replyTo(), QpActor.VERBS),
          "qp-" + (++qps));
      return Behaviors.same();
    }

    private Behavior<Command> register(Register r) {
      OffHeapBuffer memory = null;
      MemoryBudget.Reservation bytes = null;
      try {
        bytes = session.memory().reserve(r.length(), "a registration on " + session.name,
            "the size or number of registrations");
        memory = OffHeapBuffer.allocate(r.length());
        Registration reg = new Registration(memory, pd.registerMemory(memory, r.access()), bytes);
        registrations.add(reg);
        r.replyTo().tell(StatusReply.success(reg));
      } catch (RuntimeException e) {
        if (memory != null) memory.close();
        if (bytes != null) bytes.close();
        r.replyTo().tell(StatusReply.error("registering " + r.length() + " bytes on "
            + session.name + " failed: " + e.getMessage()));
      }
      return Behaviors.same();
    }

    private Behavior<Command> deregister(Deregister d) {
      if (!registrations.remove(d.registration())) {
        d.replyTo().tell(StatusReply.error("not a registration of this PD (or deregistered)"));
        return Behaviors.same();
      }
      try {
        d.registration().free();
        d.replyTo().tell(StatusReply.ack());
      } catch (RuntimeException e) {
        registrations.add(d.registration());
        d.replyTo().tell(StatusReply.error(e.getMessage()));
      }
      return Behaviors.same();
    }

    /** Runs after the QP actors have stopped, so nothing in the PD is in use. */
    private void close() {
      for (Registration r : registrations) {
        try {
          r.region.close();
        } catch (RuntimeException e) {
          ctx.getLog().error("{}: deregistering failed: {}", session.name, e.getMessage());
        }
        r.freeMemory();
      }
      registrations.clear();
      try {
        pool.close();
      } catch (RuntimeException e) {
        ctx.getLog().error("{}: closing the buffer pool failed: {}", session.name, e.getMessage());
      }
      try {
        pd.close();
      } catch (RuntimeException e) {
        ctx.getLog().error("{}: deallocating the PD failed: {}", session.name, e.getMessage());
      }
    }
  }
}
