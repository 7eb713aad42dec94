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
 * No transport at all: a connection is the server's handler run in an island of its own, its
 * two directions Pekko's own asynchronous boundaries between actors in this JVM. Each element
 * crosses from the client's island to the server's and back, as over a message transport that
 * keeps boundaries, but nothing is copied or posted: its message rate is what Pekko Streams
 * alone allows for that shape, the ceiling of any such transport on this machine.
 */
final class InJvmTransport implements Transport {
  private static final AtomicInteger ports = new AtomicInteger(1);
  private final Map<InetSocketAddress, Supplier<Flow<ByteString, ByteString, ?>>> servers =
      new ConcurrentHashMap<>();

  @Override
  public String name() {
    return "in-jvm";
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
    return Flow.<ByteString>create().async().via(handler.get()).async()
        .mapMaterializedValue(m -> CompletableFuture.completedFuture(Done.getInstance()));
  }
}
