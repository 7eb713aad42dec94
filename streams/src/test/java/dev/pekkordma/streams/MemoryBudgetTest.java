package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
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
 * The registered-memory budget: a connection past it is refused naming the setting and the
 * numbers, the others go on, and every byte comes back when connections close. A peer that never
 * reads holds only its own connection's memory, and the other connections keep flowing.
 */
class MemoryBudgetTest {
  /**
   * Each end of a connection reserves its receive ring and its send buffers, which start small:
   * four slots and two buffers of 4 KiB.
   */
  static final long END = 4 * 4096 + 2 * 4096;
  static ActorSystem<Void> system;
  static RdmaStreams rdma;
  static MemoryBudget budget;

  @BeforeAll
  static void start() {
    // one connection (both ends in this system) and half of another
    system = StreamsTestKit.system("MemoryBudgetTest",
        "pekko-rdma.runtime.max-registered-memory = " + (2 * END + END / 2));
    rdma = StreamsTestKit.streams(system);
    budget = RdmaRuntime.get(system).memory();
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  private static Pair<SourceQueueWithComplete<ByteString>, SinkQueueWithCancel<ByteString>> open(
      int port) {
    return Source.<ByteString>queue(8, OverflowStrategy.backpressure())
        .via(rdma.outgoingConnection(HOST, port))
        .toMat(Sink.queue(), Keep.both())
        .run(system);
  }

  private static ByteString echo(
      Pair<SourceQueueWithComplete<ByteString>, SinkQueueWithCancel<ByteString>> c, String text)
      throws Exception {
    await(c.first().offer(ByteString.fromString(text)));
    return await(c.second().pull()).orElseThrow();
  }

  @Test
  void aConnectionPastTheBudgetIsRefusedNamingItAndTheOthersGoOn() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    int port = server.localAddress().getPort();
    ResourceCounts bound = rdma.liveResources();
    var first = open(port);
    assertEquals("one", echo(first, "one").utf8String());
    assertEquals(2 * END, budget.used(), "both ends of the first connection");

    ExecutionException refused = assertThrows(ExecutionException.class,
        () -> await(Source.single(ByteString.fromString("two"))
            .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.seq(), system)));
    String why = refused.getCause().getMessage();
    assertTrue(why.contains(MemoryBudget.SETTING) && why.contains(String.valueOf(budget.limit()))
        && why.contains("pekko-rdma.streams.receive-buffers"), why);
    assertEquals(2 * END, budget.used(), "the refused connection gave back what it reserved");
    assertEquals("still here", echo(first, "still here").utf8String());

    first.first().complete();
    assertTrue(await(first.second().pull()).isEmpty(), "the echo ends with the client");
    StreamsTestKit.awaitResources(rdma, bound);
    awaitUsed(0);
    List<ByteString> again = await(Source.single(ByteString.fromString("three"))
        .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.seq(), system));
    assertEquals("three", again.get(0).utf8String(), "room again once the first has gone");
    await(server.unbind());
    StreamsTestKit.awaitResources(rdma, start);
    awaitUsed(0);
  }

  @Test
  void aReaderThatNeverReadsHoldsOnlyItsOwnConnection() throws Exception {
    try (var wide = new Wide()) {
      ServerBinding server = await(wide.rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      int port = server.localAddress().getPort();
      // sends far more than the rings hold, reads nothing: the echo server's writes back stall
      var stuck = Source.<ByteString>queue(1024, OverflowStrategy.backpressure())
          .via(wide.rdma.outgoingConnection(HOST, port))
          .toMat(Sink.queue(), Keep.both())
          .run(wide.system);
      ByteString big = ByteString.fromArray(new byte[60 * 1024]);
      for (int i = 0; i < 200; i++) stuck.first().offer(big); // queued; most wait upstream
      // the others run full exchanges meanwhile
      List<Integer> totals = IntStream.range(0, 4).parallel().mapToObj(i -> {
        try {
          return await(Source.repeat(ByteString.fromArray(new byte[1000])).take(500)
              .via(wide.rdma.outgoingConnection(HOST, port))
              .runWith(Sink.fold(0, (n, b) -> n + b.size()), wide.system),
              Duration.ofSeconds(30));
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }).collect(Collectors.toList());
      assertEquals(List.of(500_000, 500_000, 500_000, 500_000), totals);
      // the stuck one was held back, not lost: it reads now and gets its first echo
      assertEquals(big.size(), await(stuck.second().pull()).orElseThrow().size());
      stuck.second().cancel();
      stuck.first().complete();
      await(server.unbind());
    }
  }

  private static void awaitUsed(long expected) throws InterruptedException {
    long deadline = System.nanoTime() + StreamsTestKit.WAIT.toNanos();
    while (budget.used() != expected && System.nanoTime() < deadline) Thread.sleep(20);
    assertEquals(expected, budget.used(), "bytes reserved from the budget");
  }

  /** A system with the default budget, for tests that need many connections. */
  private static final class Wide implements AutoCloseable {
    final ActorSystem<Void> system = StreamsTestKit.system("MemoryBudgetTest-wide", "");
    final RdmaStreams rdma = StreamsTestKit.streams(system);

    @Override
    public void close() {
      system.terminate();
    }
  }
}
