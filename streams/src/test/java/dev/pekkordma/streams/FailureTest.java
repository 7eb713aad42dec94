package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Peers that vanish, streams cancelled mid-transfer: errors name the peer, nothing leaks. */
class FailureTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;
  static final ByteString CHUNK = ByteString.fromArray(new byte[16 * 1024]);

  @BeforeAll
  static void start() throws InterruptedException {
    system = StreamsTestKit.system("FailureTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void aVanishedPeerFailsTheStreamNamingIt() throws Exception {
    ResourceCounts start = rdma.liveResources();
    // the server lives in an actor system (and provider) of its own, which then goes away
    ActorSystem<Void> other = StreamsTestKit.system("Vanishing", "");
    CountDownLatch serving = new CountDownLatch(1);
    ServerBinding binding = await(RdmaStreams.get(other).bindAndHandle(
        Flow.of(ByteString.class).map(b -> {
          serving.countDown();
          return b;
        }), HOST, 0));
    int port = binding.localAddress().getPort();
    CompletionStage<Done> client = Source.repeat(CHUNK).throttle(200, Duration.ofSeconds(1))
        .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.ignore(), system);
    assertTrue(serving.await(10, TimeUnit.SECONDS));
    other.terminate();
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(client));
    RdmaStreamException lost = assertInstanceOf(RdmaStreamException.class, e.getCause());
    assertEquals(port, lost.peer().getPort());
    assertTrue(lost.getMessage().contains(HOST + ":" + port), lost.getMessage());
    assertTrue(lost.reason().contains("disconnected") || lost.reason().contains("unreachable")
        || lost.reason().contains("error state"), lost.reason());
    awaitResources(rdma, start);
  }

  @Test
  void aRouteErrorAfterTheQpOpenedFailsTheConnectAndFreesIt() throws Exception {
    HostileFixture.assumeSoft(); // a port taken down by fault injection
    dev.pekkordma.verbs.RdmaProvider provider =
        dev.pekkordma.runtime.RdmaRuntime.get(system).provider();
    try (dev.pekkordma.verbs.DeviceContext ctx = provider.open(provider.devices().get(0))) {
      ResourceCounts start = rdma.liveResources();
      FaultInjection.of(provider).orElseThrow().setPortState(ctx, 1, false);
      try {
        // the address resolves and the QP opens; the route does not
        CompletionStage<Done> client = Source.single(CHUNK)
            .via(rdma.outgoingConnection(HOST, 1)).runWith(Sink.ignore(), system);
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(client));
        RdmaStreamException failed = assertInstanceOf(RdmaStreamException.class, e.getCause());
        assertTrue(failed.reason().contains("ROUTE_ERROR"), failed.reason());
      } finally {
        FaultInjection.of(provider).orElseThrow().setPortState(ctx, 1, true);
      }
      awaitResources(rdma, start);
    }
  }

  @Test
  void aServerThatNeverAnswersFailsTheConnectAtItsOneDeadlineNamingIt() throws Exception {
    dev.pekkordma.verbs.RdmaProvider provider =
        dev.pekkordma.runtime.RdmaRuntime.get(system).provider();
    ResourceCounts start = rdma.liveResources();
    // a listener whose application never accepts: the request is left unanswered
    try (dev.pekkordma.cm.CmEventChannel channel = provider.createCmEventChannel();
        dev.pekkordma.cm.CmId listener = channel.createId("never answers")) {
      listener.bind(new InetSocketAddress(HOST, 0));
      listener.listen(1);
      InetSocketAddress at = new InetSocketAddress(HOST, listener.localAddress().getPort());
      long began = System.nanoTime();
      CompletionStage<?> connected = Source.<ByteString>never()
          .viaMat(rdma.outgoingConnection(at, Optional.empty(), java.util.List.of(), true,
              Optional.of(Duration.ofMillis(1500)), Optional.empty()), Keep.right())
          .to(Sink.ignore()).run(system);
      ExecutionException e = assertThrows(ExecutionException.class, () -> await(connected));
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
      RdmaStreamException failed = assertInstanceOf(RdmaStreamException.class, e.getCause());
      assertTrue(failed.reason().contains("not connected within PT1.5S (pekko-rdma.streams"
          + ".connect-timeout)"), failed.reason());
      assertTrue(tookMs >= 1400 && tookMs < 4500, "one deadline for every step: " + tookMs);
      // the request it left unanswered has an id of its own (the kernel keeps it in the channel)
      dev.pekkordma.cm.CmEvent request = channel.awaitEvent(Duration.ofSeconds(5));
      assertTrue(request != null
          && request.type() == dev.pekkordma.cm.CmEventType.CONNECT_REQUEST, "" + request);
      request.id().close();
    }
    awaitResources(rdma, start);
  }

  @Test
  void abortingMidTransferFreesEverythingOnBothSides() throws Exception {
    ResourceCounts start = rdma.liveResources();
    AtomicInteger received = new AtomicInteger();
    CompletionStage<?>[] serverSide = new CompletionStage<?>[1];
    ServerBinding binding = await(rdma.bind(HOST, 0).to(Sink.foreach(c ->
        serverSide[0] = c.handleWith(Flow.fromSinkAndSourceMat(
            Sink.foreach(b -> received.incrementAndGet()), Source.never(), Keep.left()),
            system))).run(system));
    Pair<UniqueKillSwitch, CompletionStage<Done>> run = Source.repeat(CHUNK)
        .viaMat(KillSwitches.single(), Keep.right())
        .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
        .toMat(Sink.ignore(), Keep.both()).run(system);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (received.get() < 200 && System.nanoTime() < deadline) Thread.sleep(5);
    assertTrue(received.get() >= 200, "the transfer is under way");
    run.first().abort(new IllegalStateException("test abort"));
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(run.second()));
    assertEquals("test abort", e.getCause().getMessage());
    // the server's connection sees the client vanish
    ExecutionException s = assertThrows(ExecutionException.class, () -> await(serverSide[0]));
    assertInstanceOf(RdmaStreamException.class, s.getCause());
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void cancellingDownstreamMidTransferClosesAndFreesEverything() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding binding = await(rdma.bindAndHandle(
        Flow.fromSinkAndSource(Sink.ignore(), Source.repeat(CHUNK)), HOST, 0));
    InetSocketAddress server = new InetSocketAddress(HOST, binding.localAddress().getPort());
    int got = await(Source.<ByteString>maybe()
        .via(rdma.outgoingConnection(server, rdma.settings(), false))
        .take(300).runWith(Sink.fold(0, (n, b) -> n + 1), system));
    assertEquals(300, got);
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  /** A bulk transfer whose receiver takes {@code n} elements and cancels. */
  private Pair<CompletionStage<TransferResult>, CompletionStage<Integer>> receiverTaking(int n,
      Source<ByteString, ?> data) throws Exception {
    Pair<CompletionStage<ServerBinding>, CompletionStage<Integer>> rx = rdma.bulkSource(HOST, 0)
        .take(n).toMat(Sink.fold(0, (k, b) -> k + 1), Keep.both()).run(system);
    int port = await(rx.first()).localAddress().getPort();
    CompletionStage<TransferResult> tx = data.runWith(
        rdma.bulkSink(new InetSocketAddress(HOST, port), rdma.bulkSettings()), system);
    return Pair.create(tx, rx.second());
  }

  private static void assertStoppedReading(CompletionStage<TransferResult> tx) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(tx));
    RdmaStreamException lost = assertInstanceOf(RdmaStreamException.class, e.getCause());
    assertTrue(lost.reason().contains("the peer stopped reading"), lost.reason());
  }

  @Test
  void aBulkReceiverCancellingMidTransferFailsTheSender() throws Exception {
    ResourceCounts start = rdma.liveResources();
    var t = receiverTaking(50, Source.repeat(CHUNK));
    assertEquals(50, await(t.second()));
    assertStoppedReading(t.first());
    awaitResources(rdma, start);
  }

  @Test
  void aBulkReceiverThatTookEverythingBeforeCancellingEndsTheTransferGracefully()
      throws Exception {
    ResourceCounts start = rdma.liveResources();
    CompletableFuture<Done> gate = new CompletableFuture<>();
    var t = receiverTaking(10, Source.repeat(CHUNK).take(10)
        .concat(Source.completionStage(gate).flatMapConcat(d -> Source.<ByteString>empty())));
    assertEquals(10, await(t.second()));
    gate.complete(Done.getInstance()); // the sender's data ends only after the cancel
    TransferResult moved = await(t.first());
    assertEquals(10, moved.messagesSent());
    assertEquals(10L * CHUNK.length(), moved.bytesSent());
    awaitResources(rdma, start);
  }

  @Test
  void anElementAfterTheReceiverCancelledFailsTheSender() throws Exception {
    ResourceCounts start = rdma.liveResources();
    CompletableFuture<Done> gate = new CompletableFuture<>();
    var t = receiverTaking(10, Source.repeat(CHUNK).take(10)
        .concat(Source.completionStage(gate).map(d -> CHUNK)));
    assertEquals(10, await(t.second()));
    gate.complete(Done.getInstance());
    assertStoppedReading(t.first());
    awaitResources(rdma, start);
  }
}
