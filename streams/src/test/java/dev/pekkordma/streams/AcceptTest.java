package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.WAIT;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A binding accepts each request as it comes, as a kernel accepts TCP connections: the client
 * is connected before the server's application takes the connection. A connection nobody
 * takes within the accept timeout is closed, and one still waiting when the binding stops is
 * closed with it; nothing they held stays.
 */
class AcceptTest {
  private static final Duration ACCEPT_TIMEOUT = Duration.ofMillis(300);
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() {
    system = StreamsTestKit.system("AcceptTest", "");
    rdma = RdmaStreams.get(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  private static RdmaStreamSettings quick() {
    return rdma.settings().withAcceptTimeout(ACCEPT_TIMEOUT);
  }

  @Test
  void aConnectionNobodyTakesIsClosedAfterTheAcceptTimeout() throws Exception {
    ResourceCounts start = rdma.liveResources();
    CompletableFuture<IncomingConnection> taken = new CompletableFuture<>();
    var bound = rdma.bind(HOST, 0, quick(), false).to(Sink.foreach(taken::complete)).run(system);
    int port = await(bound).localAddress().getPort();
    var client = Source.<ByteString>maybe().viaMat(rdma.outgoingConnection(HOST, port),
        Keep.right()).toMat(Sink.seq(), Keep.both()).run(system);
    await(client.first()); // up before anyone took it
    IncomingConnection late = await(taken);
    RdmaStreamException e = failure(client.second(), WAIT);
    assertTrue(e.getMessage().contains(HOST + ":" + port), e.getMessage());
    // taken after its time: the flow fails naming the setting
    var handled = Source.<ByteString>empty().via(late.flow()).runWith(Sink.seq(), system);
    RdmaStreamException tooLate = failure(handled, WAIT);
    assertTrue(tooLate.getMessage().contains("accept-timeout"), tooLate.getMessage());
    await(await(bound).unbind());
    awaitResources(rdma, start);
  }

  @Test
  void connectionsWaitingWhenTheBindingStopsAreClosed() throws Exception {
    ResourceCounts start = rdma.liveResources();
    // a server that never asks for a connection: the requests wait, accepted, in the backlog
    var bound = rdma.bind(HOST, 0, quick(), false).toMat(Sink.asPublisher(
        org.apache.pekko.stream.javadsl.AsPublisher.WITHOUT_FANOUT), Keep.left()).run(system);
    int port = await(bound).localAddress().getPort();
    List<CompletionStage<List<ByteString>>> clients = new java.util.ArrayList<>();
    for (int i = 0; i < 3; i++) {
      var client = Source.<ByteString>maybe().viaMat(rdma.outgoingConnection(HOST, port),
          Keep.right()).toMat(Sink.seq(), Keep.both()).run(system);
      await(client.first());
      clients.add(client.second());
    }
    await(await(bound).unbind());
    for (CompletionStage<List<ByteString>> c : clients) {
      RdmaStreamException e = failure(c, WAIT);
      assertTrue(e.getMessage().contains(HOST + ":" + port), e.getMessage());
    }
    awaitResources(rdma, start);
  }

  @Test
  void aConnectionTakenInTimeCarriesWhatWasSentBeforeAndGoesOn() throws Exception {
    ResourceCounts start = rdma.liveResources();
    CompletableFuture<IncomingConnection> taken = new CompletableFuture<>();
    var bound = rdma.bind(HOST, 0).to(Sink.foreach(taken::complete)).run(system);
    int port = await(bound).localAddress().getPort();
    List<ByteString> sent = List.of(ByteString.fromString("a"), ByteString.fromString("bc"));
    var client = Source.from(sent).viaMat(rdma.outgoingConnection(HOST, port), Keep.right())
        .toMat(Sink.seq(), Keep.both()).run(system);
    await(client.first());
    Thread.sleep(100); // the client's writes and its end wait in the server's ring
    taken.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).handleWith(
        Flow.of(ByteString.class).map(b -> b.concat(b)), system);
    assertEquals(List.of(ByteString.fromString("aa"), ByteString.fromString("bcbc")),
        await(client.second()));
    await(await(bound).unbind());
    awaitResources(rdma, start);
  }

  private static RdmaStreamException failure(CompletionStage<?> stage, Duration within) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> stage.toCompletableFuture().get(within.toMillis(), TimeUnit.MILLISECONDS));
    return assertInstanceOf(RdmaStreamException.class, e.getCause());
  }
}
