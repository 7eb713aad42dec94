package dev.pekkordma.streams;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.io.Inet;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/**
 * Pekko's {@code Tcp} and {@code RdmaStreams} as the comparisons use them: Tcp's bind and
 * outgoingConnection with every argument, the same calls on either.
 */
interface TcpLike {
  /** "tcp" or "rdma". */
  String name();

  Source<IncomingConnection, CompletionStage<ServerBinding>> bind(String host, int port,
      int backlog, Iterable<Inet.SocketOption> options, boolean halfClose,
      Optional<Duration> idleTimeout);

  Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> outgoingConnection(
      InetSocketAddress remote, Optional<InetSocketAddress> local,
      Iterable<Inet.SocketOption> options, boolean halfClose, Optional<Duration> connectTimeout,
      Optional<Duration> idleTimeout);

  static TcpLike tcp(ActorSystem<?> system) {
    Tcp tcp = Tcp.get(system);
    return new TcpLike() {
      @Override
      public String name() {
        return "tcp";
      }

      @Override
      public Source<IncomingConnection, CompletionStage<ServerBinding>> bind(String host,
          int port, int backlog, Iterable<Inet.SocketOption> options, boolean halfClose,
          Optional<Duration> idleTimeout) {
        return tcp.bind(host, port, backlog, options, halfClose, idleTimeout);
      }

      @Override
      public Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>>
          outgoingConnection(InetSocketAddress remote, Optional<InetSocketAddress> local,
              Iterable<Inet.SocketOption> options, boolean halfClose,
              Optional<Duration> connectTimeout, Optional<Duration> idleTimeout) {
        return tcp.outgoingConnection(remote, local, options, halfClose, connectTimeout,
            idleTimeout);
      }
    };
  }

  static TcpLike rdma(ActorSystem<?> system) {
    RdmaStreams rdma = RdmaStreams.get(system);
    return new TcpLike() {
      @Override
      public String name() {
        return "rdma";
      }

      @Override
      public Source<IncomingConnection, CompletionStage<ServerBinding>> bind(String host,
          int port, int backlog, Iterable<Inet.SocketOption> options, boolean halfClose,
          Optional<Duration> idleTimeout) {
        return rdma.bind(host, port, backlog, options, halfClose, idleTimeout);
      }

      @Override
      public Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>>
          outgoingConnection(InetSocketAddress remote, Optional<InetSocketAddress> local,
              Iterable<Inet.SocketOption> options, boolean halfClose,
              Optional<Duration> connectTimeout, Optional<Duration> idleTimeout) {
        return rdma.outgoingConnection(remote, local, options, halfClose, connectTimeout,
            idleTimeout);
      }
    };
  }
}
