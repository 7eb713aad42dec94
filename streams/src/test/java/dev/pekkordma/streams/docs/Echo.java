package dev.pekkordma.streams.docs;

// tag::readme-echo[]
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.streams.RdmaStreams;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/** {@code Echo server} in one JVM, {@code Echo client} in another: three messages there and back. */
public class Echo {
  public static void main(String[] args) throws Exception {
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "echo");
    System.out.println(RdmaRuntime.get(system).provider()); // which provider serves, and why
    if (args[0].equals("server")) {
      server(system, "127.0.0.1", 9000);
    } else {
      System.out.println(client(system, "127.0.0.1", 9000).toCompletableFuture().get());
      system.terminate();
    }
  }

  public static CompletionStage<ServerBinding> server(ActorSystem<?> system, String host, int port) {
    return RdmaStreams.get(system).bind(host, port) // was: Tcp.get(system)
        .to(Sink.foreach(connection -> connection.handleWith(Flow.of(ByteString.class), system)))
        .run(system);
  }

  public static CompletionStage<List<String>> client(ActorSystem<?> system, String host, int port) {
    return Source.from(List.of("hello", "over", "RDMA")).map(ByteString::fromString)
        .via(RdmaStreams.get(system).outgoingConnection(host, port)) // was: Tcp.get(system)
        .map(ByteString::utf8String)
        .runWith(Sink.seq(), system);
  }
}
// end::readme-echo[]
