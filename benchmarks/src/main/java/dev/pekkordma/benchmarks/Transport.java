package dev.pekkordma.benchmarks;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/**
 * A byte-stream transport as Pekko Streams' {@code Tcp} offers it: a server that handles each
 * connection with a flow, and a client connection as a flow. The stream benchmark runs the same
 * code over each transport, so their figures differ only by the transport.
 */
interface Transport {
  /** A name for the result files and the report ("pekko-tcp"). */
  String name();

  /** Binds on {@code host} (port 0: any), handling each connection with a new flow. */
  CompletionStage<InetSocketAddress> bind(ActorSystem system, String host,
      Supplier<Flow<ByteString, ByteString, ?>> handler);

  /** A connection to {@code server}. */
  Flow<ByteString, ByteString, ? extends CompletionStage<?>> outgoing(ActorSystem system,
      InetSocketAddress server);

  /** The memory this transport has registered for RDMA in {@code system}: none for Tcp. */
  default long registeredBytes(ActorSystem system) {
    return 0;
  }
}
