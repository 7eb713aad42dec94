package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Failing and closing as Tcp does: an address in use is a {@code BindFailedException}, an
 * unknown host an {@code UnknownHostException}; a server that answers and closes is heard in
 * full, whether it read what it was sent or never did (its reading side
 * ending does not drop what it still writes), and a client that writes after the server has
 * closed completely is told, as Tcp's write fails with a broken pipe: nothing the server's
 * application did not take is reported delivered.
 */
class TcpParityTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() {
    system = StreamsTestKit.system("TcpParityTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void anAddressInUseAndAnUnknownHostFailAsTcpsDo() throws Exception {
    ServerBinding first = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    ExecutionException inUse = assertThrows(ExecutionException.class, () -> await(
        rdma.bindAndHandle(Flow.of(ByteString.class), HOST, first.localAddress().getPort())));
    assertTrue(inUse.getCause() instanceof org.apache.pekko.stream.BindFailedException,
        String.valueOf(inUse.getCause()));
    assertTrue(inUse.getCause().getCause().getMessage().contains("in use"),
        String.valueOf(inUse.getCause().getCause()));
    await(first.unbind());

    ExecutionException unknown = assertThrows(ExecutionException.class, () -> await(
        Source.single(ByteString.fromString("x"))
            .via(rdma.outgoingConnection("no-such-host.invalid", 9))
            .runWith(Sink.seq(), system)));
    assertTrue(unknown.getCause() instanceof RdmaStreamException
        && unknown.getCause().getCause() instanceof java.net.UnknownHostException,
        String.valueOf(unknown.getCause()));
  }

  @Test
  void aServerThatAnswersOneAndClosesIsHeard() throws Exception {
    ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class).take(1), HOST, 0));
    InetSocketAddress at = new InetSocketAddress(HOST, server.localAddress().getPort());
    var r = await(Source.single(ByteString.fromString("one"))
        .concat(Source.maybe())
        .via(rdma.outgoingConnection(HOST, at.getPort()))
        .runWith(Sink.seq(), system));
    assertEquals(List.of(ByteString.fromString("one")), r, "the answer, then the end");
    await(server.unbind());
  }

  @Test
  void aWriteAfterAServerThatNeverCancelledHasClosedFails() throws Exception {
    // the server reads everything, says goodbye and closes (without half-close): no CANCEL
    ServerBinding server = await(rdma.bindAndHandle(Flow.fromSinkAndSource(Sink.ignore(),
        Source.single(ByteString.fromString("bye"))), HOST, 0));
    Client c = Client.to(server);
    SourceQueueWithComplete<ByteString> out = c.out;
    SinkQueueWithCancel<ByteString> in = c.in;
    CompletionStage<TransferResult> closed = c.closed;
    await(out.offer(ByteString.fromString("one")));
    assertEquals("bye", await(in.pull()).orElseThrow().utf8String());
    assertTrue(await(in.pull()).isEmpty(), "the server closed");
    Thread.sleep(200); // its end has reached us
    out.offer(ByteString.fromString("two"));
    out.complete();
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(closed),
        "a write nobody could take is not a graceful close");
    assertTrue(String.valueOf(e.getCause().getMessage()).contains("cannot be delivered"),
        String.valueOf(e.getCause()));
    await(server.unbind());
  }

  @Test
  void aWriteAfterTheServerClosedFailsAndIsNotCountedDelivered() throws Exception {
    // the server takes one message, answers it and closes both directions
    ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class).take(1), HOST, 0));
    Client c = Client.to(server);
    SourceQueueWithComplete<ByteString> out = c.out;
    SinkQueueWithCancel<ByteString> in = c.in;
    CompletionStage<TransferResult> closed = c.closed;
    await(out.offer(ByteString.fromString("one")));
    assertEquals("one", await(in.pull()).orElseThrow().utf8String());
    assertTrue(await(in.pull()).isEmpty(), "the server closed");
    // the server's application is gone: this one can reach nobody
    out.offer(ByteString.fromString("two"));
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(closed));
    assertTrue(String.valueOf(e.getCause().getMessage()).contains("the peer stopped reading")
        && e.getCause().getMessage().contains("3-byte element cannot be delivered"),
        String.valueOf(e.getCause()));
    await(server.unbind());
  }

  /** A server that never reads what it is sent, but answers and completes: heard in full. */
  @Test
  void aServerThatNeverReadsButAnswersIsHeardAndTheClientCompletes() throws Exception {
    ServerBinding server = await(rdma.bindAndHandle(Flow.fromSinkAndSource(
        Flow.of(ByteString.class).mapAsync(1, b -> new java.util.concurrent.CompletableFuture<>())
            .to(Sink.ignore()),
        Source.single(ByteString.fromString("answer"))), HOST, 0));
    var r = await(Source.from(List.of(ByteString.fromString("a"), ByteString.fromString("b")))
        .concat(Source.maybe())
        .via(rdma.outgoingConnection(HOST, server.localAddress().getPort()))
        .runWith(Sink.seq(), system));
    assertEquals(List.of(ByteString.fromString("answer")), r);
    await(server.unbind());
  }

  /** As Tcp's localAddress: the connection goes out from it, and an address of no device fails. */
  @Test
  void aLocalAddressIsWhereTheConnectionComesFrom() throws Exception {
    java.util.concurrent.CompletableFuture<InetSocketAddress> seen =
        new java.util.concurrent.CompletableFuture<>();
    ServerBinding server = await(rdma.bind(HOST, 0).to(Sink.foreach(c -> {
      seen.complete(c.remoteAddress());
      c.handleWith(Flow.of(ByteString.class), system);
    })).run(system));
    InetSocketAddress at = new InetSocketAddress(HOST, server.localAddress().getPort());
    InetSocketAddress from = new InetSocketAddress(HOST, 0);
    var r = await(Source.single(ByteString.fromString("hi"))
        .via(rdma.outgoingConnection(at, from, rdma.settings(), true))
        .runWith(Sink.seq(), system));
    assertEquals(List.of(ByteString.fromString("hi")), r);
    assertEquals(HOST, await(seen).getAddress().getHostAddress());
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(
        Source.single(ByteString.fromString("x"))
            .via(rdma.outgoingConnection(at, new InetSocketAddress("203.0.113.9", 0),
                rdma.settings(), true))
            .runWith(Sink.seq(), system)));
    assertTrue(String.valueOf(e.getCause().getMessage()).contains("203.0.113.9"),
        String.valueOf(e.getCause()));
    await(server.unbind());
  }

  /** A client whose elements go out through a queue and come in through one. */
  private record Client(SourceQueueWithComplete<ByteString> out, SinkQueueWithCancel<ByteString> in,
      CompletionStage<TransferResult> closed) {
    static Client to(ServerBinding server) {
      InetSocketAddress at = new InetSocketAddress(HOST, server.localAddress().getPort());
      var m = Source.<ByteString>queue(4, OverflowStrategy.backpressure())
          .viaMat(rdma.outgoingConnectionWithResult(at, rdma.settings(), true), Keep.both())
          .toMat(Sink.queue(), Keep.both())
          .run(system);
      return new Client(m.first().first(), m.second(), m.first().second().second());
    }
  }
}
