package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.testing.FailingCmChannel;
import dev.pekkordma.streams.impl.StreamsRuntime;
import dev.pekkordma.verbs.ResourceCounts;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * The CM's event reader fails (its channel broke, not the system's end): nothing that waits for
 * a CM event waits on. A binding and a single-connection server fail naming their address and
 * why; a new connection is refused at once, naming the same; every id goes.
 */
class CmReaderFailureTest {
  @Test
  void whatWaitsForCmEventsFailsNamingWhyAndNewConnectionsAreRefused() throws Exception {
    ActorSystem<Void> system = StreamsTestKit.system("CmReaderFailureTest", "");
    try {
      AtomicReference<FailingCmChannel> channel = new AtomicReference<>();
      RdmaStreams rdma = new RdmaStreams(new StreamsRuntime(system, c -> {
        channel.set(new FailingCmChannel(c));
        return channel.get();
      }));
      ResourceCounts start = rdma.liveResources();

      Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> server =
          rdma.bind(HOST, 0).toMat(Sink.ignore(), Keep.both()).run(system);
      int serverPort = await(server.first()).localAddress().getPort();
      Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> bulk =
          rdma.bulkSource(HOST, 0).toMat(Sink.ignore(), Keep.both()).run(system);
      int bulkPort = await(bulk.first()).localAddress().getPort();

      channel.get().failReading("the channel's descriptor went bad");

      assertFailsNaming(server.second(), serverPort, "the CM event reader stopped");
      assertFailsNaming(bulk.second(), bulkPort, "the CM event reader stopped");

      CompletionStage<Done> client = Source.single(ByteString.fromString("hello"))
          .via(rdma.outgoingConnection(HOST, serverPort)).runWith(Sink.ignore(), system);
      assertFailsNaming(client, serverPort, "the CM event reader has stopped");

      awaitResources(rdma, start);
    } finally {
      system.terminate();
      await(system.getWhenTerminated());
    }
  }

  /** {@code stream} fails naming {@code HOST:port}, {@code what} and the channel's fault. */
  private static void assertFailsNaming(CompletionStage<Done> stream, int port, String what) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(stream));
    RdmaStreamException failed = assertInstanceOf(RdmaStreamException.class, e.getCause());
    assertTrue(failed.getMessage().contains(HOST + ":" + port)
        && failed.reason().contains(what) && failed.reason().contains("descriptor went bad"),
        failed.getMessage());
  }
}
