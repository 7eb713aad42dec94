package dev.pekkordma.streams;

import java.net.InetSocketAddress;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.ClassicActorSystemProvider;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/**
 * A client's connection request, as Tcp's IncomingConnection: materializing {@link #flow()}
 * (once) accepts it. One ByteString written by the client arrives as one ByteString here.
 */
public final class IncomingConnection {
  private final InetSocketAddress localAddress;
  private final InetSocketAddress remoteAddress;
  private final Flow<ByteString, ByteString, NotUsed> flow;

  IncomingConnection(InetSocketAddress localAddress, InetSocketAddress remoteAddress,
      Flow<ByteString, ByteString, NotUsed> flow) {
    this.localAddress = localAddress;
    this.remoteAddress = remoteAddress;
    this.flow = flow;
  }

  public InetSocketAddress localAddress() {
    return localAddress;
  }

  public InetSocketAddress remoteAddress() {
    return remoteAddress;
  }

  /** The connection: upstream goes to the client, what the client sends comes downstream. */
  public Flow<ByteString, ByteString, NotUsed> flow() {
    return flow;
  }

  /** Accepts the connection and runs it through {@code handler}. */
  public <M> M handleWith(Flow<ByteString, ByteString, M> handler, Materializer materializer) {
    return flow.joinMat(handler, (a, b) -> b).run(materializer);
  }

  public <M> M handleWith(Flow<ByteString, ByteString, M> handler,
      ClassicActorSystemProvider system) {
    return handleWith(handler, Materializer.matFromSystem(system));
  }

  @Override
  public String toString() {
    return "IncomingConnection(" + remoteAddress + " -> " + localAddress + ")";
  }
}
