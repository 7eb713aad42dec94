package dev.pekkordma.benchmarks;

import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/**
 * References without a transport, for the echo rate. {@code in-jvm}: a connection is the
 * server's handler run in an island of its own, behind Pekko's asynchronous boundaries, so each
 * element crosses from the client's actor to the server's and back as over a message transport
 * that keeps boundaries, with nothing copied or posted: what Pekko's own way of moving elements
 * between actors achieves. {@code none}: no connection and no server, the connection's flow is
 * {@code Flow.create()} fused into the client: the benchmark's own client (its source and its
 * fold) alone, the most that any transport can show in this benchmark.
 */
final class InJvmTransport implements Transport {
  private static final AtomicInteger ports = new AtomicInteger(1);
  private final Map<InetSocketAddress, Supplier<Flow<ByteString, ByteString, ?>>> servers =
      new ConcurrentHashMap<>();
  private final boolean islands;

  /** With {@code islands}, {@code in-jvm}; without, {@code none}. */
  InJvmTransport(boolean islands) {
    this.islands = islands;
  }

  @Override
  public String name() {
    return islands ? "in-jvm" : "none";
  }

  @Override
  public CompletionStage<InetSocketAddress> bind(ActorSystem system, String host,
      Supplier<Flow<ByteString, ByteString, ?>> handler) {
    InetSocketAddress at = InetSocketAddress.createUnresolved(host, ports.getAndIncrement());
    servers.put(at, handler);
    return CompletableFuture.completedFuture(at);
  }

  @Override
  public Flow<ByteString, ByteString, ? extends CompletionStage<?>> outgoing(ActorSystem system,
      InetSocketAddress server) {
    Supplier<Flow<ByteString, ByteString, ?>> handler = servers.get(server);
    if (handler == null) throw new IllegalArgumentException("nothing bound at " + server);
    Flow<ByteString, ByteString, ?> connection = islands
        ? Flow.<ByteString>create().async().via(handler.get()).async()
        : Flow.<ByteString>create();
    return connection.mapMaterializedValue(
        m -> CompletableFuture.completedFuture(Done.getInstance()));
  }
}
