package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BindFailedException;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Tcp used as a Tcp user uses it, and the same code on RdmaStreams: the cases where the streams
 * layer was no drop-in. Each runs one script on Pekko's {@code Tcp} and on {@code RdmaStreams}
 * and expects what Tcp does, or the one way RDMA may be louder (a write the peer's application
 * can never take fails the writer's upstream, naming why; its reading goes on).
 */
class TcpDropInTest {
  static ActorSystem<Void> system;

  @BeforeAll
  static void start() {
    system = StreamsTestKit.system("TcpDropInTest", "");
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  private static TcpLike transport(String name) {
    return name.equals("tcp") ? TcpLike.tcp(system) : TcpLike.rdma(system);
  }

  /** TcpSpec "properly half-close by default": a server that cancels its reading still answers. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aServerThatNeverReadsIsHeardInFull(String name) throws Exception {
    TcpLike t = transport(name);
    int port = bind(t, true, Flow.fromSinkAndSource(Sink.cancelled(),
        Source.single(ByteString.fromString("Early response"))));
    List<ByteString> back = await(Source.single(ByteString.fromString("hello"))
        .via(connect(t, new InetSocketAddress(HOST, port), true)).runWith(Sink.seq(), system));
    assertEquals("Early response", StreamsTestKit.join(back).utf8String());
  }

  /**
   * A client that cancels its reading leaves the other direction alone: the server's writes to it
   * vanish (Tcp) or fail the server's writing side naming why (RDMA), and the server still reads
   * what the client sends and its end.
   */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aReadersCancelLeavesTheOtherDirectionRunning(String name) throws Exception {
    TcpLike t = transport(name);
    var served = new java.util.concurrent.CompletableFuture<Pair<CompletionStage<List<ByteString>>,
        Pair<BoundedSourceQueue<ByteString>, CompletionStage<Done>>>>();
    int port = bindEach(t, false, 0, c -> served.complete(c.apply(
        Flow.fromSinkAndSourceMat(Sink.<ByteString>seq(),
            Source.<ByteString>queue(16).watchTermination(Keep.both()), Keep.both()))));
    var client = Source.<ByteString>queue(16)
        .viaMat(connect(t, new InetSocketAddress(HOST, port), true), Keep.both())
        .toMat(Sink.queue(), Keep.both()).run(system);
    await(client.first().second()); // connected: Tcp's client ends whole if cancelled before
    var server = await(served);
    client.second().cancel();
    Thread.sleep(100); // the client's cancel has reached the server (RDMA: its CANCEL)
    for (int i = 0; i < 3; i++) server.second().first().offer(ByteString.fromString("late " + i));
    Thread.sleep(100);
    client.first().first().offer(ByteString.fromString("from the client"));
    client.first().first().complete();
    assertEquals("from the client", StreamsTestKit.join(await(server.first())).utf8String(),
        "the server reads the client's bytes and its end");
    CompletionStage<Done> serverWrites = server.second().second();
    Thread.sleep(100);
    if (name.equals("tcp")) {
      assertFalse(serverWrites.toCompletableFuture().isCompletedExceptionally(),
          "Tcp's writes vanish");
    } else {
      ExecutionException e = assertThrows(ExecutionException.class, () -> await(serverWrites));
      assertTrue(e.getCause().getMessage().contains("the peer stopped reading"),
          String.valueOf(e.getCause()));
    }
  }

  /** A server without half-close whose handler cancels its input closes: the client's ends. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aServerWithoutHalfCloseThatCancelsItsInputCloses(String name) throws Exception {
    TcpLike t = transport(name);
    int port = bind(t, false, Flow.fromSinkAndSource(Sink.cancelled(), Source.maybe()));
    List<ByteString> back = await(Source.<ByteString>maybe()
        .via(connect(t, new InetSocketAddress(HOST, port), true))
        .runWith(Sink.seq(), system), Duration.ofSeconds(5));
    assertEquals(List.of(), back);
  }

  /** An unresolved address is resolved, as Tcp's {@code outgoingConnection(host, port)} makes. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void anUnresolvedAddressIsResolved(String name) throws Exception {
    TcpLike t = transport(name);
    int port = bind(t, false, Flow.of(ByteString.class));
    // localhost is the loopback, where the native provider has no RDMA device: there the name
    // is the CM address's own text, unresolved all the same
    String host = StreamsTestKit.NATIVE ? HOST : "localhost";
    List<ByteString> back = await(Source.single(ByteString.fromString("hi"))
        .via(connect(t, InetSocketAddress.createUnresolved(host, port), true))
        .runWith(Sink.seq(), system));
    assertEquals("hi", StreamsTestKit.join(back).utf8String());
  }

  /** A bind on a port in use: a BindFailedException whose own message names the address and why. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aBindOnAPortInUseSaysWhereAndWhy(String name) throws Exception {
    TcpLike t = transport(name);
    int port = bind(t, false, Flow.of(ByteString.class));
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> bind(t, false, port, Flow.of(ByteString.class)));
    BindFailedException bind = assertInstanceOf(BindFailedException.class, e.getCause());
    String message = bind.getMessage();
    assertTrue(message.contains(HOST) && message.contains(String.valueOf(port)), message);
    assertTrue(message.toLowerCase().contains("in use"), message);
  }

  /** A connection's handleWith. */
  interface Handler {
    <M> M apply(Flow<ByteString, ByteString, M> handler);
  }

  /** Binds {@code host}, port 0, and handles each connection with {@code handler}. */
  private static int bind(TcpLike t, boolean halfClose, Flow<ByteString, ByteString, ?> handler)
      throws Exception {
    return bind(t, halfClose, 0, handler);
  }

  private static int bind(TcpLike t, boolean halfClose, int port,
      Flow<ByteString, ByteString, ?> handler) throws Exception {
    return bindEach(t, halfClose, port, c -> c.apply(handler));
  }

  /** Binds and gives each connection's handleWith to {@code each}. */
  private static int bindEach(TcpLike t, boolean halfClose, int port, Consumer<Handler> each)
      throws Exception {
    return await(t.bind(HOST, port, 100, List.of(), halfClose, Optional.empty())
        .to(Sink.foreach(c -> each.accept(new Handler() {
          @Override
          public <M> M apply(Flow<ByteString, ByteString, M> h) {
            return c.handleWith(h, system);
          }
        }))).run(system)).localAddress().getPort();
  }

  private static Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> connect(
      TcpLike t, InetSocketAddress to, boolean halfClose) {
    return t.outgoingConnection(to, Optional.empty(), List.of(), halfClose, Optional.empty(),
        Optional.empty());
  }
}
