package dev.pekkordma.streams;

import dev.pekkordma.runtime.PortMetrics;
import dev.pekkordma.streams.impl.BindStage;
import dev.pekkordma.streams.impl.Closing;
import dev.pekkordma.streams.impl.CompletionSources;
import dev.pekkordma.streams.impl.ConnectionStage;
import dev.pekkordma.streams.impl.Framing;
import dev.pekkordma.streams.impl.StreamsRuntime;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.ClassicActorSystemProvider;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.io.Inet;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/**
 * Pekko Streams over RDMA, as Pekko's {@code Tcp}: swap {@code Tcp.get(system)} for {@code
 * RdmaStreams.get(system)} and the rest of the code stays, Tcp's own types included ({@code
 * Tcp.IncomingConnection}, {@code Tcp.ServerBinding}, {@code Tcp.OutgoingConnection}). Unlike
 * TCP, message boundaries are kept (one ByteString in, one out), and backpressure is RDMA's
 * own: a sender writes only into receive slots the receiver has freed.
 *
 * <pre>{@code
 * Source<IncomingConnection, CompletionStage<ServerBinding>> connections =
 *     RdmaStreams.get(system).bind("127.0.0.1", 9000);   // was Tcp.get(system).bind(...)
 * connections.runForeach(c -> c.handleWith(Flow.of(ByteString.class), system), system);
 * Source.single(ByteString.fromString("hello"))
 *     .via(RdmaStreams.get(system).outgoingConnection("127.0.0.1", 9000))
 *     .runWith(Sink.head(), system);
 * }</pre>
 *
 * <p>Settings come from {@code pekko-rdma.streams} (checked at start, a wrong one named) and can
 * be changed per call with a {@link RdmaStreamSettings}. The bulk sink and source move large
 * data with larger slots ({@code pekko-rdma.streams.bulk}), zero-copy on both sides with
 * {@link #bulkChunkSink} and {@link #bulkBufferSource}; {@link #completions} turns any CQ into a
 * source.
 */
public final class RdmaStreams implements Extension {
  private final StreamsRuntime rt;
  private final RdmaDatagrams datagrams;

  private RdmaStreams(ActorSystem<?> system) {
    this(new StreamsRuntime(system));
  }

  /** On a runtime of the caller's making (tests put faults in it); one per actor system. */
  RdmaStreams(StreamsRuntime rt) {
    this.rt = rt;
    this.datagrams = new RdmaDatagrams(rt);
  }

  public static RdmaStreams get(ActorSystem<?> system) {
    return RdmaStreamsId.INSTANCE.apply(system);
  }

  public static RdmaStreams get(ClassicActorSystemProvider system) {
    return get(Adapter.toTyped(system.classicSystem()));
  }

  /** The message connections' settings from the config. */
  public RdmaStreamSettings settings() {
    return rt.settings;
  }

  /** The bulk sink and source's settings from the config. */
  public RdmaStreamSettings bulkSettings() {
    return rt.bulkSettings;
  }

  /**
   * The streams' metrics now: connections opened, closed and failed, each live one with its
   * traffic and credit stalls, and the totals. The same figures go to JDK Flight Recorder as
   * events ({@code dev.pekkordma.streams.*}) when a recording asks for them, and to Micrometer
   * through {@code pekko-rdma-micrometer}.
   */
  public StreamsMetrics metrics() {
    return rt.meter.snapshot();
  }

  /**
   * The counters of the provider's RDMA ports (packets, RNR NAKs, retries), as the devices keep
   * them: per port, for the actors' QPs and the streams' alike.
   */
  public List<PortMetrics> ports() {
    return rt.runtime.ports();
  }

  /** Unreliable datagrams: bind, send and multicast flows, as Alpakka's {@code Udp}. */
  public RdmaDatagrams datagrams() {
    return datagrams;
  }

  /** The provider's live resources: what every test of a clean end compares. */
  public ResourceCounts liveResources() {
    return rt.provider.liveResources();
  }

  // ---------------------------------------------------------------- server

  /** Listens on {@code host:port} (port 0 picks one), as {@code Tcp.bind}; no half-close. */
  public Source<IncomingConnection, CompletionStage<ServerBinding>> bind(String host, int port) {
    return bind(host, port, rt.settings, false);
  }

  /**
   * As Tcp's {@code bind} with every argument: {@code backlog} connections accepted and not yet
   * handled wait (more are rejected), and {@code idleTimeout} fails a connection idle both ways.
   * TCP's socket options mean nothing to RDMA: they are ignored.
   */
  public Source<IncomingConnection, CompletionStage<ServerBinding>> bind(String host, int port,
      int backlog, Iterable<Inet.SocketOption> options, boolean halfClose,
      Optional<Duration> idleTimeout) {
    return bind(host, port, rt.settings.withBacklog(backlog).withIdleTimeout(idleTimeout),
        halfClose);
  }

  /**
   * Listens with these settings. With {@code halfClose}, a connection whose handler completes
   * its output still reads until the client completes; without, completing the output closes
   * the connection, and so does cancelling the input, as with Tcp.
   */
  public Source<IncomingConnection, CompletionStage<ServerBinding>> bind(String host, int port,
      RdmaStreamSettings settings, boolean halfClose) {
    return Source.fromGraph(new BindStage(rt, new InetSocketAddress(host, port), settings,
        Closing.halfClose(halfClose), Framing.MESSAGES));
  }

  /**
   * Binds and runs every connection through {@code handler}: {@code bind} and {@code
   * handleWith} in one (Tcp's Scala API has it; its Java API has not).
   */
  public CompletionStage<ServerBinding> bindAndHandle(Flow<ByteString, ByteString, ?> handler,
      String host, int port) {
    Materializer mat = Materializer.matFromSystem(rt.system);
    return bind(host, port).to(Sink.foreach(c -> c.handleWith(handler, mat))).run(mat);
  }

  // ---------------------------------------------------------------- client

  /** Connects to {@code host:port}, as {@code Tcp.outgoingConnection}; with half-close. */
  public Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> outgoingConnection(
      String host, int port) {
    return outgoingConnection(new InetSocketAddress(host, port), rt.settings, true);
  }

  /**
   * As Tcp's {@code outgoingConnection} with every argument: from {@code localAddress} if given,
   * failing when not connected within {@code connectTimeout} (else {@code connect-timeout}) or
   * idle both ways for {@code idleTimeout}. TCP's socket options mean nothing to RDMA: they are
   * ignored. An unresolved address is resolved first, off the stream's thread.
   */
  public Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> outgoingConnection(
      InetSocketAddress remoteAddress, Optional<InetSocketAddress> localAddress,
      Iterable<Inet.SocketOption> options, boolean halfClose, Optional<Duration> connectTimeout,
      Optional<Duration> idleTimeout) {
    RdmaStreamSettings s = rt.settings.withIdleTimeout(idleTimeout);
    if (connectTimeout.isPresent()) s = s.withConnectTimeout(connectTimeout.get());
    return outgoingConnection(remoteAddress, localAddress.orElse(null), s, halfClose);
  }

  /**
   * Connects with these settings. With {@code halfClose}, completing upstream sends the end of
   * data and the flow goes on reading until the server closes; without, completing upstream
   * closes the connection, and so does cancelling downstream, as with Tcp.
   */
  public Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> outgoingConnection(
      InetSocketAddress remote, RdmaStreamSettings settings, boolean halfClose) {
    return outgoingConnection(remote, null, settings, halfClose);
  }

  /**
   * As above, from {@code localAddress} (Tcp's {@code localAddress}: the address, and the port
   * unless 0, the connection goes out from; null: the route's choice); an address of no RDMA
   * device fails the connection naming it.
   */
  public Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> outgoingConnection(
      InetSocketAddress remote, InetSocketAddress localAddress, RdmaStreamSettings settings,
      boolean halfClose) {
    return ConnectionStage.<ByteString>flow(ConnectionStage.outgoing(rt, remote, localAddress,
        settings, Closing.halfClose(halfClose), Framing.MESSAGES))
        .mapMaterializedValue(m -> m.connected());
  }

  /**
   * As {@link #outgoingConnection(InetSocketAddress, RdmaStreamSettings, boolean)}, with how the
   * connection ended: a {@link TransferResult} after a graceful close (everything sent had
   * reached the server's application), else the failure.
   */
  public Flow<ByteString, ByteString,
      Pair<CompletionStage<OutgoingConnection>, CompletionStage<TransferResult>>>
      outgoingConnectionWithResult(InetSocketAddress remote, RdmaStreamSettings settings,
          boolean halfClose) {
    return ConnectionStage.<ByteString>flow(ConnectionStage.outgoing(rt, remote, settings,
        Closing.halfClose(halfClose), Framing.MESSAGES))
        .mapMaterializedValue(m -> Pair.create(m.connected(), m.closed()));
  }

  // ---------------------------------------------------------------- bulk

  /**
   * Sends everything to a {@link #bulkSource} at {@code host:port} by RDMA WRITE WITH IMM into
   * its registered ring (ByteStrings longer than a slot are split). Completes, with what was
   * moved, once the receiver's application has taken the last byte.
   */
  public Sink<ByteString, CompletionStage<TransferResult>> bulkSink(String host, int port) {
    return bulkSink(new InetSocketAddress(host, port), rt.bulkSettings);
  }

  public Sink<ByteString, CompletionStage<TransferResult>> bulkSink(InetSocketAddress remote,
      RdmaStreamSettings settings) {
    return ConnectionStage.<ByteString>flow(ConnectionStage.outgoing(rt, remote,
        settings.withOversize(RdmaStreamSettings.Oversize.SPLIT), Closing.HALF_CLOSE,
        Framing.BULK))
        .toMat(Sink.ignore(), Keep.left()).mapMaterializedValue(m -> m.closed());
  }

  /**
   * The zero-copy bulk sink: each {@link BulkChunk} writes its data straight into a registered
   * send buffer, which is written to the receiver's ring as it is and goes back to the pool
   * after the write's completion.
   */
  public Sink<BulkChunk, CompletionStage<TransferResult>> bulkChunkSink(InetSocketAddress remote,
      RdmaStreamSettings settings) {
    return ConnectionStage.<BulkChunk>flow(ConnectionStage.outgoing(rt, remote, settings,
        Closing.HALF_CLOSE, Framing.BULK)).toMat(Sink.ignore(), Keep.left())
        .mapMaterializedValue(m -> m.closed());
  }

  /**
   * Receives one bulk sender at {@code host:port}: binds, accepts the first connection (then
   * stops listening), and emits what each write carried, in order, completing when the sender
   * has completed and everything was taken.
   */
  public Source<ByteString, CompletionStage<ServerBinding>> bulkSource(String host, int port) {
    return bulkSource(host, port, rt.bulkSettings);
  }

  public Source<ByteString, CompletionStage<ServerBinding>> bulkSource(String host, int port,
      RdmaStreamSettings settings) {
    return Source.<ByteString>empty().viaMat(ConnectionStage.<ByteString>flow(
        ConnectionStage.listenOnce(rt, new InetSocketAddress(host, port), settings,
            Closing.HALF_CLOSE, Framing.BULK)),
        Keep.right()).mapMaterializedValue(m -> m.binding());
  }

  /**
   * The zero-copy bulk source: as {@link #bulkSource}, but each write is emitted in place, as a
   * {@link ReceivedBuffer} viewing the registered ring slot it landed in (one element per write:
   * a ByteString that {@link #bulkSink} split comes as several, see {@link
   * ReceivedBuffer#endsElement}). Nothing is copied or allocated per element. A slot's credit
   * goes back to the sender only when its buffer is released, in ring order; holding buffers
   * stops the sender, and the sender completes only after every buffer has been released. The
   * ring's memory outlives the stream until the last buffer is released.
   */
  public Source<ReceivedBuffer, CompletionStage<ServerBinding>> bulkBufferSource(String host,
      int port) {
    return bulkBufferSource(host, port, rt.bulkSettings);
  }

  public Source<ReceivedBuffer, CompletionStage<ServerBinding>> bulkBufferSource(String host,
      int port, RdmaStreamSettings settings) {
    return ConnectionStage.bufferSource(rt, new InetSocketAddress(host, port), settings)
        .mapMaterializedValue(m -> m.binding());
  }

  // ---------------------------------------------------------------- completions

  /**
   * A CQ's completions as a source, fed by a poller on a thread of its own through a
   * bounded queue of {@code bufferSize}. The poller takes from the CQ only what the queue has
   * room for: a slow consumer leaves completions in the CQ, so size it for what is posted. The
   * CQ's completion channel, if any, must serve this CQ alone. The materialized stage completes
   * when the poller has stopped (after cancellation): only then close the CQ.
   */
  public Source<WorkCompletion, CompletionStage<Done>> completions(CompletionQueue cq,
      int bufferSize) {
    return CompletionSources.create(rt, cq, bufferSize);
  }

  public static final class RdmaStreamsId extends ExtensionId<RdmaStreams> {
    static final RdmaStreamsId INSTANCE = new RdmaStreamsId();

    private RdmaStreamsId() {}

    @Override
    public RdmaStreams createExtension(ActorSystem<?> system) {
      return new RdmaStreams(system);
    }
  }
}
