package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.verbs.ResourceCounts;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class ConnectionTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() {
    system = StreamsTestKit.system("ConnectionTest", "");
    rdma = RdmaStreams.get(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void echoKeepsMessageBoundaries() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), "127.0.0.1", 0));
    List<ByteString> sent = new ArrayList<>();
    for (int i = 1; i <= 20; i++) sent.add(ByteString.fromString("message " + "x".repeat(i * 7)));
    List<ByteString> got = await(Source.from(sent)
        .via(rdma.outgoingConnection("127.0.0.1", binding.localAddress().getPort()))
        .runWith(Sink.seq(), system));
    assertEquals(sent, got);
    await(binding.unbind());
    awaitResources(rdma, start);
  }
}
