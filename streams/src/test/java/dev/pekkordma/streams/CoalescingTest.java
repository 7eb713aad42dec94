package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Small elements that go together in BATCH writes arrive as they were sent: each ByteString
 * whole and on its own, in order, among larger ones that are split and the empty ones, both
 * ways, whether the other side coalesces its own writes or not.
 */
class CoalescingTest {
  static ActorSystem<Void> coalescing;
  static ActorSystem<Void> plain;

  @BeforeAll
  static void start() {
    coalescing = StreamsTestKit.system("CoalescingTest", "");
    plain = StreamsTestKit.system("CoalescingTest-plain",
        "pekko-rdma.streams.coalesce-writes = off");
  }

  @AfterAll
  static void stop() {
    coalescing.terminate();
    plain.terminate();
  }

  /** Mostly small, some empty, some longer than a batch holds, a few longer than a slot. */
  static List<ByteString> elements(long seed, int n) {
    Random r = new Random(seed);
    List<ByteString> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int kind = r.nextInt(100);
      int length = kind < 5 ? 0 : kind < 85 ? 1 + r.nextInt(300)
          : kind < 98 ? 1000 + r.nextInt(20_000) : 70_000 + r.nextInt(200_000);
      byte[] b = new byte[length];
      r.nextBytes(b);
      out.add(ByteString.fromArrayUnsafe(b));
    }
    return out;
  }

  private static void echoes(ActorSystem<Void> client, ActorSystem<Void> server, long seed)
      throws Exception {
    RdmaStreams serverSide = RdmaStreams.get(server);
    RdmaStreams clientSide = RdmaStreams.get(client);
    ResourceCounts before = clientSide.liveResources();
    ServerBinding binding = await(serverSide.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    List<ByteString> sent = elements(seed, 5000);
    List<ByteString> back = await(Source.from(sent)
        .via(clientSide.outgoingConnection(HOST, binding.localAddress().getPort()))
        .runWith(Sink.seq(), client), Duration.ofSeconds(60));
    assertEquals(sent.size(), back.size(), "elements back");
    for (int i = 0; i < sent.size(); i++) {
      assertEquals(sent.get(i), back.get(i), "element " + i);
    }
    await(binding.unbind());
    StreamsTestKit.awaitResources(clientSide, before);
  }

  @Test
  void bothSidesCoalescing() throws Exception {
    echoes(coalescing, coalescing, 1);
  }

  @Test
  void aCoalescingClientAndAPlainServer() throws Exception {
    echoes(coalescing, plain, 2);
  }

  @Test
  void aPlainClientAndACoalescingServer() throws Exception {
    echoes(plain, coalescing, 3);
  }

  /**
   * Elements that come one by one, each in a burst of its own, while the peer has not yet taken
   * the one before (its application is slow) gather, and still go at the end of their burst:
   * upstream never ends here, so nothing but that sends them.
   */
  @Test
  void anElementBehindOneThePeerHasNotTakenStillGoes() throws Exception {
    RdmaStreams rdma = RdmaStreams.get(coalescing);
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class)
        .mapAsync(1, b -> later(b, 20)), HOST, 0));
    List<ByteString> sent = new ArrayList<>();
    for (int i = 0; i < 20; i++) sent.add(ByteString.fromString("request " + i));
    List<ByteString> back = await(Source.from(sent).mapAsync(1, b -> later(b, 5))
        .concat(Source.never())
        .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
        .take(sent.size())
        .runWith(Sink.seq(), coalescing), Duration.ofSeconds(10));
    assertEquals(sent, back);
    await(binding.unbind());
  }

  private static CompletionStage<ByteString> later(ByteString b, long millis) {
    return Patterns.after(Duration.ofMillis(millis), coalescing.classicSystem(),
        () -> CompletableFuture.completedFuture(b));
  }

  /** A burst of tiny ones, each its own element: what coalescing is for. */
  @Test
  void aBurstOfTinyElementsKeepsEveryBoundary() throws Exception {
    RdmaStreams rdma = RdmaStreams.get(coalescing);
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    List<ByteString> sent = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) sent.add(ByteString.fromString(Integer.toString(i)));
    List<ByteString> back = await(Source.from(sent)
        .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
        .runWith(Sink.seq(), coalescing), Duration.ofSeconds(60));
    assertEquals(sent, back);
    await(binding.unbind());
  }
}
