package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.WAIT;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.streams.impl.FailingCmChannel;
import dev.pekkordma.streams.impl.StreamsRuntime;
import dev.pekkordma.verbs.ResourceCounts;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
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
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (rdma.liveResources().contexts() < 1 && System.nanoTime() < deadline) Thread.sleep(5);
      ResourceCounts start = rdma.liveResources();

      Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> server =
          rdma.bind(HOST, 0).toMat(Sink.ignore(), Keep.both()).run(system);
      int serverPort = await(server.first()).localAddress().getPort();
      Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> bulk =
          rdma.bulkSource(HOST, 0).toMat(Sink.ignore(), Keep.both()).run(system);
      int bulkPort = await(bulk.first()).localAddress().getPort();

      channel.get().failReading("the channel's descriptor went bad");

      for (Object[] waiting : new Object[][] {{server.second(), serverPort},
          {bulk.second(), bulkPort}}) {
        @SuppressWarnings("unchecked")
        CompletionStage<Done> done = (CompletionStage<Done>) waiting[0];
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(done));
        RdmaStreamException failed = assertInstanceOf(RdmaStreamException.class, e.getCause());
        assertTrue(failed.getMessage().contains(HOST + ":" + waiting[1])
            && failed.reason().contains("the CM event reader stopped")
            && failed.reason().contains("descriptor went bad"), failed.getMessage());
      }

      CompletionStage<Done> client = Source.single(ByteString.fromString("hello"))
          .via(rdma.outgoingConnection(HOST, serverPort)).runWith(Sink.ignore(), system);
      ExecutionException e = assertThrows(ExecutionException.class, () -> await(client));
      RdmaStreamException refused = assertInstanceOf(RdmaStreamException.class, e.getCause());
      assertTrue(refused.getMessage().contains(HOST + ":" + serverPort)
          && refused.reason().contains("the streams' CM event reader has stopped")
          && refused.reason().contains("descriptor went bad"), refused.getMessage());

      awaitResources(rdma, start);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }
}
