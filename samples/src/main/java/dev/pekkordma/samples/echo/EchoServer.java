package dev.pekkordma.samples.echo;

import dev.pekkordma.actors.Buffer;
import dev.pekkordma.actors.BufferPool;
import dev.pekkordma.actors.CmActor;
import dev.pekkordma.actors.ConnectionActor;
import dev.pekkordma.actors.ListenerActor;
import dev.pekkordma.actors.QpActor;
import dev.pekkordma.actors.QpSpec;
import dev.pekkordma.actors.RdmaExtension;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * An event-driven echo server over RDMA CM: every connection request is accepted, and every
 * message received on a connection is sent back from the very buffer it arrived in.
 */
public final class EchoServer {
  /** How many receives each connection keeps posted. */
  static final int RECEIVE_DEPTH = 8;

  private EchoServer() {}

  /** Listens on {@code address}; tells {@code bound} the address it got. */
  public static Behavior<ListenerActor.Event> create(InetSocketAddress address,
      ActorRef<InetSocketAddress> bound) {
    return Behaviors.setup(ctx -> {
      RdmaExtension.get(ctx.getSystem()).cm()
          .tell(new CmActor.Listen(address, QpSpec.rc(), ctx.getSelf()));
      int[] sessions = {0};
      return Behaviors.receive(ListenerActor.Event.class)
          .onMessage(ListenerActor.Bound.class, b -> {
            ctx.getLog().info("echo server listening on {}", b.address());
            bound.tell(b.address());
            return Behaviors.same();
          })
          .onMessage(ListenerActor.BindFailed.class, f -> {
            ctx.getLog().error("echo server could not listen on {}: {}", f.address(), f.reason());
            return Behaviors.stopped();
          })
          .onMessage(ListenerActor.ConnectionRequested.class, r -> {
            ctx.spawn(Session.create(r.connection()), "session-" + (++sessions[0]));
            return Behaviors.same();
          })
          .onMessage(ListenerActor.Unbound.class, u -> Behaviors.stopped())
          .build();
    });
  }

  /** One connection: keeps receives posted and sends each message back. */
  static final class Session {
    sealed interface Command {}

    record FromConnection(ConnectionActor.Event event) implements Command {}

    record FromQp(QpActor.WorkResult result) implements Command {}

    /** Accepts the request, with the session as the connection's handler. */
    static Behavior<Command> create(ActorRef<ConnectionActor.Command> connection) {
      return Behaviors.setup(ctx -> {
        connection.tell(new ConnectionActor.Accept("echo".getBytes(),
            ctx.messageAdapter(ConnectionActor.Event.class, FromConnection::new)));
        return Behaviors.receive(Command.class)
            .onMessage(FromConnection.class, m -> m.event() instanceof ConnectionActor.Connected c
                ? new Session(ctx, c).running() : Behaviors.stopped())
            .build();
      });
    }

    private final ActorContext<Command> ctx;
    private final ActorRef<QpActor.Command> qp;
    private final BufferPool pool;
    private final ActorRef<QpActor.WorkResult> results;
    private long nextId = 1;
    /** Receives posted and not yet completed (nor flushed). */
    private int receivesPosted;

    private Session(ActorContext<Command> ctx, ConnectionActor.Connected c) {
      this.ctx = ctx;
      this.qp = c.qp();
      this.pool = c.pool();
      this.results = ctx.messageAdapter(QpActor.WorkResult.class, FromQp::new);
      List<QpActor.Work> receives = new ArrayList<>();
      for (int i = 0; i < RECEIVE_DEPTH; i++) receives.add(receive());
      qp.tell(new QpActor.Post(receives, results));
      ctx.getLog().info("echo session with {}", c.remote());
    }

    private QpActor.Work receive() {
      receivesPosted++;
      return new QpActor.Receive(nextId++, pool.lease());
    }

    private Behavior<Command> running() {
      return Behaviors.receive(Command.class)
          .onMessage(FromQp.class, m -> {
            if (m.result() instanceof QpActor.Completed done) echo(done);
            return Behaviors.same();
          })
          .onMessage(FromConnection.class, m -> ended())
          .build();
    }

    /**
     * The connection ended: the QP flushes the receives still posted, to this session, which
     * stops once it has them all (so that none reaches it stopped, as a dead letter).
     */
    private Behavior<Command> ended() {
      if (receivesPosted == 0) return Behaviors.stopped();
      return Behaviors.receive(Command.class)
          .onMessage(FromQp.class, m -> {
            if (m.result() instanceof QpActor.Completed done) countReceives(done);
            return receivesPosted == 0 ? Behaviors.stopped() : Behaviors.same();
          })
          .build();
    }

    private void countReceives(QpActor.Completed done) {
      for (QpActor.Completion c : done.completions()) if (c.id() > 0) receivesPosted--;
    }

    /** A new receive for each message that came, and the message back from its own buffer. */
    private void echo(QpActor.Completed done) {
      countReceives(done);
      List<QpActor.Work> work = new ArrayList<>();
      for (QpActor.Completion c : done.completions()) {
        if (c.buffer() == null) continue; // a send's completion, or a flush at the end
        Buffer b = c.buffer();
        work.add(receive());
        work.add(new QpActor.Send(-c.id(), b, c.byteLength()));
      }
      if (!work.isEmpty()) qp.tell(new QpActor.Post(work, results));
    }
  }
}
