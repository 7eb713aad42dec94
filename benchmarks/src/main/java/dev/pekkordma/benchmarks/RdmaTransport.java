package dev.pekkordma.benchmarks;

import dev.pekkordma.streams.RdmaStreams;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import dev.pekkordma.runtime.RdmaRuntime;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/**
 * The streams layer, {@code RdmaStreams}, with its default settings: bound and connected the way
 * {@link TcpTransport} does Pekko's {@code Tcp}. The provider is {@code pekko-rdma.provider}.
 */
final class RdmaTransport implements Transport {
  @Override
  public String name() {
    return "rdma-streams";
  }

  @Override
  public CompletionStage<InetSocketAddress> bind(ActorSystem system, String host,
      Supplier<Flow<ByteString, ByteString, ?>> handler) {
    return RdmaStreams.get(system).bind(host, 0)
        .to(Sink.foreach(c -> c.handleWith(handler.get(), system)))
        .run(system)
        .thenApply(ServerBinding::localAddress);
  }

  @Override
  public Flow<ByteString, ByteString, ? extends CompletionStage<?>> outgoing(ActorSystem system,
      InetSocketAddress server) {
    return RdmaStreams.get(system).outgoingConnection(server.getHostString(), server.getPort());
  }

  @Override
  public long registeredBytes(ActorSystem system) {
    return RdmaRuntime.get(Adapter.toTyped(system)).memory().used();
  }
}
