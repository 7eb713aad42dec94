package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.streams.BulkChunk;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.ReceivedBuffer;
import dev.pekkordma.streams.TransferResult;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.GraphStageWithMaterializedValue;
import org.apache.pekko.util.ByteString;
import scala.Tuple2;

/**
 * One RDMA connection as a flow: elements in (ByteStrings, or {@link BulkChunk}s that write
 * straight into registered memory) go to the peer, what the peer sends comes out. The protocol
 * is in {@link Wire}. Everything runs on the stage's own thread: it posts, polls its CQ when the
 * device hub's poller wakes it, and reacts to the CM events the CM reader hands it.
 *
 * <p>Backpressure is RDMA's: the peer's free ring slots are this side's credits and nothing is
 * written without one; a slot of our ring is given back (as a credit) only when downstream has
 * taken its message, so a slow consumer stops the producer with no buffer in between. A stage
 * that lends its ring ({@link #bufferSource}) emits the slots themselves, {@link LeasedRing}'s
 * leases, and gives a slot back only when the application releases it.
 *
 * <p>Close: when upstream completes, after the last write a FIN goes; the peer answers FIN_ACK
 * once its application has taken everything before the FIN. The connection is torn down (the
 * CM disconnect, then the QP, registrations and CQ) only when each direction is done and the
 * last control message has completed, so a graceful close loses nothing in flight.
 */
@InternalApi
public final class ConnectionStage
    extends GraphStageWithMaterializedValue<FlowShape<Object, Object>, ConnectionStage.Mat> {

  /** What a connection materializes: when it is up, and how it ended. */
  public record Mat(CompletableFuture<OutgoingConnection> connected,
      CompletableFuture<TransferResult> closed, CompletableFuture<ServerBinding> binding) {}

  /** A connection the binding accepted, for the stage to take over. */
  record Passive(EarlyAccept accepted, InetSocketAddress local, InetSocketAddress remote,
      String acceptTimeoutSetting) {}

  /** The stage as a flow of {@code T}: ByteStrings, or BulkChunks; with its idle timeout. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static <T> Flow<T, ByteString, Mat> flow(ConnectionStage stage) {
    return (Flow) stage.withIdleTimeout(Flow.fromGraph(stage));
  }

  private Flow<Object, Object, Mat> withIdleTimeout(Flow<Object, Object, Mat> connection) {
    return settings.idleTimeout().map(t -> IdleTimeout.around(connection, t, peer(),
        settings.path() + ".idle-timeout")).orElse(connection);
  }

  /** The peer as known before connecting: a listener knows only where it listens. */
  private InetSocketAddress peer() {
    return role instanceof Role.Connecting o ? o.remote()
        : role instanceof Role.Accepting i ? i.request().remote()
        : ((Role.ListenOnce) role).address();
  }

  final Inlet<Object> in = Inlet.create("RdmaConnection.in");
  final Outlet<Object> out = Outlet.create("RdmaConnection.out");
  final FlowShape<Object, Object> shape = FlowShape.of(in, out);

  final StreamsRuntime rt;
  final RdmaStreamSettings settings;
  final Closing closing;
  final Framing framing;
  final Role role;
  final boolean lend; // emits ReceivedBuffers: the ring's slots in place

  /** Who starts the connection, and how. */
  sealed interface Role {
    /** We connect to a server, from {@code local} (null: the route's choice). */
    record Connecting(InetSocketAddress remote, InetSocketAddress local) implements Role {}

    /** We accept a request a binding took. */
    record Accepting(Passive request) implements Role {}

    /** We listen for one client, accept it and stop listening. */
    record ListenOnce(InetSocketAddress address) implements Role {}
  }

  private ConnectionStage(StreamsRuntime rt, RdmaStreamSettings settings, Closing closing,
      Framing framing, Role role, boolean lend) {
    this.rt = rt;
    this.settings = settings;
    this.closing = closing;
    this.framing = framing;
    this.role = role;
    this.lend = lend;
  }

  public static ConnectionStage outgoing(StreamsRuntime rt, InetSocketAddress remote,
      RdmaStreamSettings settings, Closing closing, Framing framing) {
    return outgoing(rt, remote, null, settings, closing, framing);
  }

  /** From {@code local} (its port 0: any), as Tcp's {@code localAddress}; null: any. */
  public static ConnectionStage outgoing(StreamsRuntime rt, InetSocketAddress remote,
      InetSocketAddress local, RdmaStreamSettings settings, Closing closing,
      Framing framing) {
    return new ConnectionStage(rt, settings, closing, framing,
        new Role.Connecting(remote, local), false);
  }

  public static ConnectionStage incoming(StreamsRuntime rt, Passive passive,
      RdmaStreamSettings settings, Closing closing, Framing framing) {
    return new ConnectionStage(rt, settings, closing, framing,
        new Role.Accepting(passive), false);
  }

  /**
   * The server side of a single connection: listens at {@code address}, accepts the first
   * client and stops listening. Its data goes straight to this stage's downstream, so the
   * close handshake's "your data reached my application" holds up to the user's own stages.
   */
  public static ConnectionStage listenOnce(StreamsRuntime rt, InetSocketAddress address,
      RdmaStreamSettings settings, Closing closing, Framing framing) {
    return new ConnectionStage(rt, settings, closing, framing,
        new Role.ListenOnce(address), false);
  }

  /**
   * A {@link #listenOnce} receiver that sends nothing and lends its ring: each write is emitted
   * in place as a {@link ReceivedBuffer}, and its slot's credit goes back when it is released.
   */
  public static Source<ReceivedBuffer, Mat> bufferSource(StreamsRuntime rt,
      InetSocketAddress address, RdmaStreamSettings settings) {
    ConnectionStage stage = new ConnectionStage(rt, settings, Closing.HALF_CLOSE, Framing.BULK,
        new Role.ListenOnce(address), true);
    @SuppressWarnings({"unchecked", "rawtypes"})
    Flow<Object, ReceivedBuffer, Mat> flow = (Flow) stage.withIdleTimeout(Flow.fromGraph(stage));
    return Source.empty().viaMat(flow, Keep.right());
  }

  @Override
  public FlowShape<Object, Object> shape() {
    return shape;
  }

  @Override
  public Attributes initialAttributes() {
    return Attributes.name("RdmaConnection");
  }

  @Override
  public Tuple2<GraphStageLogic, Mat> createLogicAndMaterializedValue(Attributes attrs) {
    Mat mat = new Mat(new CompletableFuture<>(), new CompletableFuture<>(),
        new CompletableFuture<>());
    return new Tuple2<>(new ConnectionLogic(this, mat), mat);
  }

}
