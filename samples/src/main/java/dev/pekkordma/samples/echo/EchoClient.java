package dev.pekkordma.samples.echo;

import dev.pekkordma.actors.BufferPool;
import dev.pekkordma.actors.CmActor;
import dev.pekkordma.actors.ConnectionActor;
import dev.pekkordma.actors.QpActor;
import dev.pekkordma.actors.QpSpec;
import dev.pekkordma.actors.RdmaExtension;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * An event-driven echo client over RDMA CM: connects, sends {@code messages} messages one at a
 * time, checks each echo, disconnects and reports.
 */
public final class EchoClient {
  /** How it went: {@code failure} is null when every message came back. */
  public record EchoResult(int echoed, long nanos, String failure) {}

  sealed interface Command {}

  record FromConnection(ConnectionActor.Event event) implements Command {}

  record FromQp(QpActor.WorkResult result) implements Command {}

  /** A request failed and the connection has not said why within a grace period. */
  record Unexplained(String failure) implements Command {}

  /** How long a failed request waits for its connection's account of the failure. */
  private static final java.time.Duration EXPLAIN = java.time.Duration.ofSeconds(1);

  private EchoClient() {}

  public static Behavior<Command> create(InetSocketAddress server, int messages,
      ActorRef<EchoResult> replyTo) {
    return Behaviors.setup(ctx -> {
      RdmaExtension.get(ctx.getSystem()).cm().tell(new CmActor.Connect(server,
          "echo please".getBytes(), QpSpec.rc(),
          ctx.messageAdapter(ConnectionActor.Event.class, FromConnection::new)));
      return Behaviors.receive(Command.class)
          .onMessage(FromConnection.class, m -> {
            if (m.event() instanceof ConnectionActor.Connected c) {
              return new State(ctx, c, messages, replyTo).start();
            }
            if (m.event() instanceof ConnectionActor.Reconnecting) return Behaviors.same();
            replyTo.tell(new EchoResult(0, 0, "not connected: " + m.event()));
            return Behaviors.stopped();
          })
          .build();
    });
  }

  private static final class State {
    private final ActorContext<Command> ctx;
    private final ConnectionActor.Connected connection;
    private final ActorRef<QpActor.Command> qp;
    private final BufferPool pool;
    private final int messages;
    private final ActorRef<EchoResult> replyTo;
    private final ActorRef<QpActor.WorkResult> results;
    private final long start = System.nanoTime();
    private int echoed;

    State(ActorContext<Command> ctx, ConnectionActor.Connected connection, int messages,
        ActorRef<EchoResult> replyTo) {
      this.ctx = ctx;
      this.connection = connection;
      this.qp = connection.qp();
      this.pool = connection.pool();
      this.messages = messages;
      this.replyTo = replyTo;
      this.results = ctx.messageAdapter(QpActor.WorkResult.class, FromQp::new);
    }

    Behavior<Command> start() {
      if (messages == 0) return finish(null);
      sendNext();
      return Behaviors.receive(Command.class)
          .onMessage(FromQp.class, m -> result(m.result()))
          .onMessage(FromConnection.class, m -> {
            if (m.event() instanceof ConnectionActor.Disconnected) {
              replyTo.tell(new EchoResult(echoed, System.nanoTime() - start,
                  echoed == messages ? null : "disconnected after " + echoed));
            } else {
              replyTo.tell(new EchoResult(echoed, System.nanoTime() - start, m.event().toString()));
            }
            return Behaviors.stopped();
          })
          .build();
    }

    /** A receive for the echo, then the message. */
    private void sendNext() {
      byte[] text = message(echoed);
      var out = pool.lease();
      out.put(0, text);
      qp.tell(new QpActor.Post(List.of(new QpActor.Receive(echoed, pool.lease()),
          new QpActor.Send(-1 - echoed, out, text.length)), results));
    }

    private Behavior<Command> result(QpActor.WorkResult r) {
      if (r instanceof QpActor.PostRejected rej) return finish("post rejected: " + rej.why());
      for (QpActor.Completion c : ((QpActor.Completed) r).completions()) {
        if (!c.ok()) return explained("work request " + c.id() + ": " + c.status());
        if (c.buffer() == null) continue; // the send
        String got = new String(c.buffer().bytes(c.byteLength()), StandardCharsets.UTF_8);
        c.buffer().release();
        if (!got.equals(new String(message(echoed), StandardCharsets.UTF_8))) {
          return finish("echo " + echoed + " came back as '" + got + "'");
        }
        echoed++;
        if (echoed == messages) {
          connection.connection().tell(ConnectionActor.Disconnect.INSTANCE);
          return Behaviors.same(); // the result goes out on Disconnected
        }
        sendNext();
      }
      return Behaviors.same();
    }

    /**
     * A failed request: the connection usually says why (the peer, what it failed to do) in a
     * moment, as ConnectionLost; that account is the result, else {@code failure} is.
     */
    private Behavior<Command> explained(String failure) {
      ctx.scheduleOnce(EXPLAIN, ctx.getSelf(), new Unexplained(failure));
      return Behaviors.receive(Command.class)
          .onMessage(FromConnection.class, m -> {
            String why = m.event() instanceof ConnectionActor.ConnectionLost lost
                ? failure + ": " + lost.reason() : failure + " (" + m.event() + ")";
            return finish(why);
          })
          .onMessage(Unexplained.class, u -> finish(u.failure()))
          .onMessage(FromQp.class, m -> Behaviors.same()) // the rest, flushed
          .build();
    }

    private Behavior<Command> finish(String failure) {
      connection.connection().tell(ConnectionActor.Disconnect.INSTANCE);
      replyTo.tell(new EchoResult(echoed, System.nanoTime() - start, failure));
      return Behaviors.stopped();
    }

    private static byte[] message(int i) {
      return ("echo message " + i).getBytes(StandardCharsets.UTF_8);
    }
  }
}
