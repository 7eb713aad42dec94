package dev.pekkordma.actors.docs;

// tag::actors-example[]
import static java.nio.charset.StandardCharsets.UTF_8;

import dev.pekkordma.actors.Buffer;
import dev.pekkordma.actors.CmActor;
import dev.pekkordma.actors.ConnectionActor;
import dev.pekkordma.actors.ListenerActor;
import dev.pekkordma.actors.QpActor;
import dev.pekkordma.actors.QpSpec;
import dev.pekkordma.actors.RdmaExtension;
import java.net.InetSocketAddress;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * A server that hands the first message of each connection to {@code inbox} (one receive posted
 * a connection: post another for each that arrives to take more), and a client that sends one
 * and disconnects. Each takes whatever the RDMA actors say (Object, narrowed for each of them):
 * short for a first program; a larger one gives each actor a protocol and message adapters.
 */
public final class HelloOverRdma {
  /** Listens on {@code address}; tells {@code bound} where, then {@code inbox} what arrives. */
  public static Behavior<Object> server(InetSocketAddress address,
      ActorRef<InetSocketAddress> bound, ActorRef<String> inbox) {
    return Behaviors.setup(ctx -> {
      RdmaExtension.get(ctx.getSystem()).cm()
          .tell(new CmActor.Listen(address, QpSpec.rc(), ctx.getSelf().narrow()));
      return Behaviors.receiveMessage(m -> {
        if (m instanceof ListenerActor.Bound b) {                 // listening: port 0 picked one
          bound.tell(b.address());
        } else if (m instanceof ListenerActor.ConnectionRequested r) {  // a client: accept it
          r.connection().tell(new ConnectionActor.Accept(new byte[0], ctx.getSelf().narrow()));
        } else if (m instanceof ConnectionActor.Connected c) {   // up: post a receive
          receive(c.qp(), c.pool().lease(), ctx.getSelf());
        } else if (m instanceof QpActor.Completed done) {         // a message arrived
          for (QpActor.Completion wc : done.completions()) {
            if (!wc.ok() || wc.buffer() == null) continue;        // a flush at the end
            inbox.tell(new String(wc.buffer().bytes(wc.byteLength()), UTF_8));
            wc.buffer().release();
          }
        }
        return Behaviors.same();
      });
    });
  }

  private static void receive(ActorRef<QpActor.Command> qp, Buffer into, ActorRef<Object> self) {
    qp.tell(QpActor.Post.of(new QpActor.Receive(1, into), self.narrow()));
  }

  /** Connects to {@code server}, sends {@code text}, disconnects and stops. */
  public static Behavior<Object> client(InetSocketAddress server, String text) {
    return Behaviors.setup(ctx -> {
      RdmaExtension.get(ctx.getSystem()).cm().tell(new CmActor.Connect(server, new byte[0],
          QpSpec.rc(), ctx.getSelf().narrow()));
      return Behaviors.receiveMessage(m -> {
        if (m instanceof ConnectionActor.Connected c) {           // connected: send
          byte[] bytes = text.getBytes(UTF_8);
          Buffer out = c.pool().lease();                          // registered memory
          out.put(0, bytes);
          c.qp().tell(QpActor.Post.of(new QpActor.Send(2, out, bytes.length),
              ctx.getSelf().narrow()));
          return sent(c);
        }
        ctx.getLog().error("not connected: {}", m);               // refused, unreachable...
        return Behaviors.stopped();
      });
    });
  }

  private static Behavior<Object> sent(ConnectionActor.Connected c) {
    return Behaviors.receiveMessage(m -> {
      if (m instanceof QpActor.Completed) {                       // the send completed
        c.connection().tell(ConnectionActor.Disconnect.INSTANCE);
      } else if (m instanceof ConnectionActor.Disconnected) {
        return Behaviors.stopped();                               // QP and buffers freed
      }
      return Behaviors.same();
    });
  }
}
// end::actors-example[]
