package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A peer that restarted listens behind the same address with a new QP; datagrams to its old QP
 * are lost without a word. Once the sender's route to it is older than {@code peer-ttl}, the
 * next send resolves it again and reaches it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DatagramRestartedPeerTest {
  final ActorSystem<Void> system = StreamsTestKit.system("DatagramRestartedPeerTest",
      "pekko-rdma.cm.connect-timeout = 1s\n"
          + "pekko-rdma.streams.datagram { peer-ttl = 300ms, resolve-timeout = 3s }");
  final RdmaDatagrams datagrams = StreamsTestKit.streams(system).datagrams();

  @AfterAll
  void shutdown() {
    system.terminate();
  }

  /** A receiving endpoint at {@code at}; complete its first to unbind it. */
  private Pair<Pair<CompletableFuture<Optional<Datagram>>, CompletionStage<InetSocketAddress>>,
      SinkQueueWithCancel<Datagram>> receiver(InetSocketAddress at) {
    return Source.<Datagram>maybe().viaMat(datagrams.bindFlow(at), Keep.both())
        .toMat(Sink.queue(), Keep.both()).run(system);
  }

  @Test
  void aPeerThatRestartedBehindItsAddressIsReachedOnceItsRouteAged() throws Exception {
    var first = receiver(new InetSocketAddress(HOST, 0));
    InetSocketAddress at = await(first.first().second());
    SourceQueueWithComplete<Datagram> sender = Source.<Datagram>queue(8,
        OverflowStrategy.backpressure()).to(datagrams.sendSink()).run(system);
    await(sender.offer(Datagram.create(ByteString.fromString("one"), at)));
    assertEquals("one", await(first.second().pull()).orElseThrow().data().utf8String());

    first.first().first().complete(Optional.empty()); // the peer goes,
    first.second().cancel();
    var second = rebind(at); // and comes back at the same address, with a new QP
    Thread.sleep(400); // past peer-ttl: the sender's route to it has aged

    await(sender.offer(Datagram.create(ByteString.fromString("two"), at)));
    Optional<Datagram> got = await(second.second().pull(), Duration.ofSeconds(10));
    assertEquals("two", got.orElseThrow().data().utf8String(), "the restarted peer heard it");
    sender.complete();
    second.first().first().complete(Optional.empty());
    second.second().cancel();
  }

  /** Binds {@code at} again once the endpoint that held it has let it go. */
  private Pair<Pair<CompletableFuture<Optional<Datagram>>, CompletionStage<InetSocketAddress>>,
      SinkQueueWithCancel<Datagram>> rebind(InetSocketAddress at) throws Exception {
    long deadline = System.nanoTime() + StreamsTestKit.WAIT.toNanos();
    while (true) {
      var r = receiver(at);
      try {
        await(r.first().second());
        return r;
      } catch (Exception stillHeld) {
        r.second().cancel();
        if (System.nanoTime() > deadline) throw stillHeld;
        Thread.sleep(50);
      }
    }
  }
}
