package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Scenarios of Pekko's own TcpSpec that make sense for a message transport, run against Pekko's
 * Tcp and against RdmaStreams alike: what a Tcp user sees is what they see here. (Tcp cuts
 * bytes as the kernel read them, so its side compares the bytes, ours the ByteStrings.)
 */
class TcpSpecScenariosTest {
  static ActorSystem<Void> system;

  @BeforeAll
  static void start() {
    system = StreamsTestKit.system("TcpSpecScenariosTest", "");
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  /** A transport as the scenarios use it: a server with a handler, a client flow. */
  interface Transport {
    int bind(Flow<ByteString, ByteString, ?> handler) throws Exception;

    Flow<ByteString, ByteString, ? extends CompletionStage<?>> connect(int port);

    /** The remote port of a client's materialized connection. */
    int remotePort(Object connection);

    /** A server that takes its first connection into {@code first} and handles none. */
    int bindUnhandled(CompletableFuture<Object> first) throws Exception;

    /** Handles a connection {@link #bindUnhandled} took. */
    void handle(Object incoming, Flow<ByteString, ByteString, ?> handler);
  }

  static Transport transport(String name) {
    if (name.equals("tcp")) {
      return new Transport() {
        @Override
        public int bind(Flow<ByteString, ByteString, ?> handler) throws Exception {
          return await(Tcp.get(system).bind(HOST, 0)
              .to(Sink.foreach(c -> c.handleWith(handler, system))).run(system))
              .localAddress().getPort();
        }

        @Override
        public Flow<ByteString, ByteString, ? extends CompletionStage<?>> connect(int port) {
          return Tcp.get(system).outgoingConnection(HOST, port);
        }

        @Override
        public int remotePort(Object connection) {
          return ((Tcp.OutgoingConnection) connection).remoteAddress().getPort();
        }

        @Override
        public int bindUnhandled(CompletableFuture<Object> first) throws Exception {
          return await(Tcp.get(system).bind(HOST, 0).to(Sink.foreach(first::complete))
              .run(system)).localAddress().getPort();
        }

        @Override
        public void handle(Object incoming, Flow<ByteString, ByteString, ?> handler) {
          ((Tcp.IncomingConnection) incoming).handleWith(handler, system);
        }
      };
    }
    RdmaStreams rdma = RdmaStreams.get(system);
    return new Transport() {
      @Override
      public int bind(Flow<ByteString, ByteString, ?> handler) throws Exception {
        return await(rdma.bindAndHandle(handler, HOST, 0)).localAddress().getPort();
      }

      @Override
      public Flow<ByteString, ByteString, ? extends CompletionStage<?>> connect(int port) {
        return rdma.outgoingConnection(HOST, port);
      }

      @Override
      public int remotePort(Object connection) {
        return ((OutgoingConnection) connection).remoteAddress().getPort();
      }

      @Override
      public int bindUnhandled(CompletableFuture<Object> first) throws Exception {
        return await(rdma.bind(HOST, 0).to(Sink.foreach(first::complete)).run(system))
            .localAddress().getPort();
      }

      @Override
      public void handle(Object incoming, Flow<ByteString, ByteString, ?> handler) {
        ((IncomingConnection) incoming).handleWith(handler, system);
      }
    };
  }

  /** TcpSpec "work in the happy case": what goes out comes back, and the client completes. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void anEchoReturnsEverythingAndCompletes(String name) throws Exception {
    Transport t = transport(name);
    int port = t.bind(Flow.of(ByteString.class));
    List<ByteString> sent = new ArrayList<>();
    for (int i = 0; i < 100; i++) sent.add(ByteString.fromString("element " + i + ";"));
    List<ByteString> back = await(Source.from(sent).via(t.connect(port))
        .runWith(Sink.seq(), system));
    assertEquals(StreamsTestKit.join(sent), StreamsTestKit.join(back));
  }

  /** TcpSpec "half close": the server reads to the client's end, then answers and closes. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aServerAnswersAfterTheClientsEnd(String name) throws Exception {
    Transport t = transport(name);
    int port = t.bind(Flow.<ByteString>create().fold(0, (n, b) -> n + b.size())
        .map(n -> ByteString.fromString("got " + n)));
    List<ByteString> back = await(Source.from(List.of(ByteString.fromString("abc"),
        ByteString.fromString("de"))).via(t.connect(port)).runWith(Sink.seq(), system));
    assertEquals(ByteString.fromString("got 5"), StreamsTestKit.join(back));
  }

  /** TcpSpec "properly half-close by default": a server that only talks is heard in full. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aServerThatOnlyTalksIsHeardAndTheClientCompletes(String name) throws Exception {
    Transport t = transport(name);
    int port = t.bind(Flow.fromSinkAndSource(Sink.ignore(),
        Source.from(List.of(ByteString.fromString("one"), ByteString.fromString("two")))));
    List<ByteString> back = await(Source.<ByteString>maybe().via(t.connect(port))
        .runWith(Sink.seq(), system));
    assertEquals(ByteString.fromString("onetwo"), StreamsTestKit.join(back));
  }

  /** TcpSpec "not lose data when the server stops reading": its answer still arrives. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aServerThatNeverReadsButAnswersIsHeard(String name) throws Exception {
    Transport t = transport(name);
    int port = t.bind(Flow.fromSinkAndSource(
        Flow.of(ByteString.class).mapAsync(1, b -> new CompletableFuture<>()).to(Sink.ignore()),
        Source.single(ByteString.fromString("answer"))));
    List<ByteString> back = await(Source.single(ByteString.fromString("question"))
        .concat(Source.maybe()).via(t.connect(port)).runWith(Sink.seq(), system));
    assertEquals(ByteString.fromString("answer"), StreamsTestKit.join(back));
  }

  /** TcpSpec "materialize the connection": the client's value names where it went. */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void theClientsMaterializedValueIsTheConnection(String name) throws Exception {
    Transport t = transport(name);
    int port = t.bind(Flow.of(ByteString.class));
    var m = Source.single(ByteString.fromString("x")).viaMat(t.connect(port), Keep.right())
        .toMat(Sink.seq(), Keep.both()).run(system);
    Object connection = await(m.first());
    await(m.second());
    assertEquals(port, t.remotePort(connection));
  }

  /**
   * TcpSpec "materialize the connection" with a server slow to take it: the client is connected
   * once the server has accepted, before its application handles the connection, and what the
   * client sent meanwhile reaches the handler when it comes.
   */
  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void aClientIsConnectedBeforeTheServerHandlesItsConnection(String name) throws Exception {
    Transport t = transport(name);
    CompletableFuture<Object> incoming = new CompletableFuture<>();
    int port = t.bindUnhandled(incoming);
    ByteString early = ByteString.fromString("sent before the server took it");
    var m = Source.single(early)
        .viaMat(t.connect(port), Keep.right()).toMat(Sink.seq(), Keep.both()).run(system);
    assertEquals(port, t.remotePort(await(m.first())));
    Object connection = await(incoming);
    assertFalse(m.second().toCompletableFuture().isDone());
    t.handle(connection, Flow.of(ByteString.class));
    assertEquals(early, StreamsTestKit.join(await(m.second())));
  }
}
