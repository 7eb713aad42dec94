package dev.pekkordma.benchmarks;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;

/**
 * Pekko Streams' javadsl {@code Tcp}, as it comes but for the listen backlog: 1024 instead of 100,
 * since with a burst of a thousand connects some accepted past a full backlog stall for minutes.
 */
final class TcpTransport implements Transport {
  static final int BACKLOG = 1024;

  @Override
  public String name() {
    return "pekko-tcp";
  }

  @Override
  public CompletionStage<InetSocketAddress> bind(ActorSystem system, String host,
      Supplier<Flow<ByteString, ByteString, ?>> handler) {
    return Tcp.get(system).bind(host, 0, BACKLOG, java.util.List.of(), true,
            java.util.Optional.empty())
        .to(Sink.foreach(c -> c.handleWith(handler.get(), system)))
        .run(system)
        .thenApply(Tcp.ServerBinding::localAddress);
  }

  @Override
  public Flow<ByteString, ByteString, ? extends CompletionStage<?>> outgoing(ActorSystem system,
      InetSocketAddress server) {
    return Tcp.get(system).outgoingConnection(server.getHostString(), server.getPort());
  }
}
