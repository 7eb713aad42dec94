package dev.pekkordma.benchmarks;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Framing;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;

/**
 * Pekko Streams' javadsl {@code Tcp}, as it comes but for the listen backlog: 1024 instead of 100,
 * since with a burst of a thousand connects some accepted past a full backlog stall for minutes.
 */
final class TcpTransport implements Transport {
  static final int BACKLOG = 1024;
  /** The longest message the framed variant takes. */
  static final int MAX_FRAME = 1 << 20;
  private final boolean framed;

  /** Tcp as a byte stream: what arrives is the bytes, however the kernel cut them. */
  TcpTransport() {
    this(false);
  }

  /**
   * With {@code framed}, each side adds Pekko's {@code Framing.simpleFramingProtocol} (a 4-byte
   * length before each ByteString), which is what a Tcp user adds to get the ByteStrings that
   * were sent: the message transport the RDMA streams are, built on Tcp.
   */
  TcpTransport(boolean framed) {
    this.framed = framed;
  }

  @Override
  public String name() {
    return framed ? "tcp-framed" : "pekko-tcp";
  }

  private BidiFlow<ByteString, ByteString, ByteString, ByteString, NotUsed> framing() {
    return Framing.simpleFramingProtocol(MAX_FRAME);
  }

  @Override
  public CompletionStage<InetSocketAddress> bind(ActorSystem system, String host,
      Supplier<Flow<ByteString, ByteString, ?>> handler) {
    return Tcp.get(system).bind(host, 0, BACKLOG, java.util.List.of(), true,
            java.util.Optional.empty())
        .to(Sink.foreach(c -> c.handleWith(serverFlow(handler.get()), system)))
        .run(system)
        .thenApply(Tcp.ServerBinding::localAddress);
  }

  @SuppressWarnings("unchecked")
  private Flow<ByteString, ByteString, Object> serverFlow(Flow<ByteString, ByteString, ?> handler) {
    Flow<ByteString, ByteString, Object> h = (Flow<ByteString, ByteString, Object>) handler;
    return framed ? framing().reversed().join(h, Keep.right()) : h;
  }

  @Override
  public Flow<ByteString, ByteString, ? extends CompletionStage<?>> outgoing(ActorSystem system,
      InetSocketAddress server) {
    Flow<ByteString, ByteString, CompletionStage<Tcp.OutgoingConnection>> tcp = Tcp.get(system).outgoingConnection(server.getHostString(), server.getPort());
    return framed ? framing().join(tcp, Keep.right()) : tcp;
  }
}
