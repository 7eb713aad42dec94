package dev.pekkordma.cluster;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;

/**
 * Typed messages between members over RDMA SEND, one message a SEND, in order per member. A
 * send completes when the peer's device has placed the message in one of its receives (the RC
 * acknowledgement), and fails with {@link SendFailedException} when it was not delivered or it
 * is not known whether it was (in flight when the connection ended): never silently.
 */
public final class Channel<T> {
  private final RdmaCluster cluster;
  private final String name;
  private final int id;
  private final Codec<T> codec;

  Channel(RdmaCluster cluster, String name, int id, Codec<T> codec) {
    this.cluster = cluster;
    this.name = name;
    this.id = id;
    this.codec = codec;
  }

  public String name() {
    return name;
  }

  /** Sends {@code message} to {@code member}; waits while it connects or is unreachable. */
  public CompletionStage<Done> send(Address member, T message) {
    ByteString bytes;
    try {
      bytes = codec.encode(message);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Done> promise = new CompletableFuture<>();
    cluster.tell(new Coordinator.Send(member, id, bytes, promise));
    return promise;
  }

  /** {@code subscriber} gets every message of this channel from any member, until it stops. */
  public void subscribe(ActorRef<Received<T>> subscriber) {
    cluster.channels().subscribe(id, subscriber); // now: frames may arrive before a watch
    cluster.coordinator().tell(new Coordinator.Watch(subscriber));
  }

  public void unsubscribe(ActorRef<Received<T>> subscriber) {
    cluster.channels().unsubscribe(id, subscriber);
  }

  /**
   * Sends each element to {@code member} over its connection, as {@link #send}, and emits it once
   * delivered, keeping {@code pekko-rdma.cluster.stream-parallelism} in flight: while the member
   * is connecting, out of credit or unreachable, the flow backpressures. It fails on the first
   * message that fails. The member's subscribers get the elements; for backpressure from the
   * member's application itself, see {@link #streamFlow}.
   */
  public Flow<T, T, NotUsed> flow(Address member) {
    return Flow.<T>create().mapAsync(cluster.settings().streamParallelism,
        m -> send(member, m).thenApply(done -> m));
  }

  /** {@link #flow} into a sink: its future completes when every element is delivered. */
  public Sink<T, CompletionStage<Done>> sink(Address member) {
    return flow(member).toMat(Sink.ignore(), Keep.right());
  }

  /**
   * A stream connection of its own to {@code member} (the streams module), materialized per run:
   * each element goes to the member's stream handler for this channel ({@link #handleStreams}),
   * and what the handler emits comes back. Backpressure is end to end: the member's handler
   * takes an element before its slot is given back to the sender. The flow holds its elements
   * while the member is unreachable and fails once it is refused, downed or removed.
   */
  public Flow<T, T, NotUsed> streamFlow(Address member) {
    return Streams.outgoing(cluster, id, codec, member);
  }

  /**
   * {@link #streamFlow} into a sink: its future completes when the member's handler has taken
   * every element and completed, and fails if the stream does.
   */
  public Sink<T, CompletionStage<Done>> streamSink(Address member) {
    return streamFlow(member).toMat(Sink.ignore(), Keep.right());
  }

  /**
   * How this member takes the streams other members open on this channel: {@code handler} makes
   * a flow per incoming stream, given its sender; what it emits goes back to the sender. Without
   * one, each element goes to the channel's subscribers (as {@link Received}) and nothing goes
   * back.
   */
  public void handleStreams(Function<Address, Flow<T, T, ?>> handler) {
    cluster.channels().entry(id).streamHandler = handler;
  }

  @Override
  public String toString() {
    return "Channel(" + name + ", " + codec + ")";
  }
}
