package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A thousand connections opened at once all succeed, each echoes, and the threads do not grow
 * with them; then everything they took is given back. Small rings, so that memory is not what
 * is measured.
 */
class ManyConnectionsTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() {
    Assumptions.assumeFalse(StreamsTestKit.NATIVE, "the software provider's scale (rxe's is"
        + " measured by the scaling benchmark)");
    system = StreamsTestKit.system("ManyConnectionsTest", "pekko-rdma.streams {"
        + " buffer-size = 4KiB, receive-buffers = 2, send-buffers = 2 }");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    if (system != null) system.terminate();
  }

  @Test
  void aThousandConcurrentConnectsAllSucceed() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    int port = server.localAddress().getPort();
    ResourceCounts bound = rdma.liveResources();
    // a first ten, so that the runtime, the device and the links have all started
    echoAll(10, port);
    int threads = Thread.activeCount();
    List<ByteString> first = echoAll(1000, port);
    assertEquals(1000, first.size());
    for (int i = 0; i < 1000; i++) assertEquals("echo " + i, first.get(i).utf8String());
    int grew = Thread.activeCount() - threads;
    assertTrue(grew < 20, "1000 connections added " + grew + " threads");
    StreamsTestKit.awaitResources(rdma, bound);
    await(server.unbind());
    StreamsTestKit.awaitResources(rdma, start);
    assertEquals(0, RdmaRuntime.get(system).memory().used(), "registered memory given back");
  }

  /** Opens {@code n} connections at once, each sending one message; their echoes in order. */
  private static List<ByteString> echoAll(int n, int port) throws Exception {
    List<CompletableFuture<List<ByteString>>> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      all.add(Source.single(ByteString.fromString("echo " + i))
          .via(rdma.outgoingConnection(HOST, port))
          .runWith(Sink.seq(), system).toCompletableFuture());
    }
    List<ByteString> echoes = new ArrayList<>();
    for (CompletableFuture<List<ByteString>> f : all) {
      List<ByteString> got = await(f, Duration.ofSeconds(60));
      assertEquals(1, got.size(), "one echo on each connection");
      echoes.add(got.get(0));
    }
    return echoes;
  }
}
