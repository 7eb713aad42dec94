package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * A message connection's registered memory follows its traffic: small while idle, the full ring
 * and send buffers while large messages flow, small again once they stop; and where the budget
 * has no room to grow, the traffic still gets through on the small ones.
 */
class ElasticRingTest {
  /** What an idle end holds: a ring of four 4 KiB slots and two 4 KiB send buffers. */
  static final long IDLE_END = 4 * 4096 + 2 * 4096;
  static final int MESSAGES = 300;
  static final int SIZE = 64 * 1024;

  private static ByteString message(int i) {
    byte[] b = new byte[SIZE];
    for (int k = 0; k < b.length; k += 8) b[k] = (byte) (i * 7 + k / 8);
    return ByteString.fromArray(b);
  }

  private static long checksum(ByteString b) {
    long sum = 0;
    for (int k = 0; k < b.size(); k += 8) sum = sum * 31 + b.apply(k);
    return sum;
  }

  /**
   * Echoes MESSAGES large messages and checks that every one came back whole and in order; with
   * {@code stayOpen} the connection stays open after them, idle.
   */
  private static void echoLarge(RdmaStreams rdma, ActorSystem<?> system, int port,
      MemoryBudget budget, AtomicLong peak, boolean stayOpen) throws Exception {
    long expected = 0;
    for (int i = 0; i < MESSAGES; i++) expected = expected * 17 + checksum(message(i));
    Source<ByteString, ?> messages = Source.range(0, MESSAGES - 1).map(ElasticRingTest::message);
    List<ByteString> back = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.concurrent.CompletableFuture<Void> all = new java.util.concurrent.CompletableFuture<>();
    // with stayOpen the client keeps reading and writing nothing: the connection idles, open
    (stayOpen ? messages.concat(Source.maybe()) : messages)
        .via(rdma.outgoingConnection(HOST, port))
        .runWith(Sink.foreach(b -> {
          peak.accumulateAndGet(budget.used(), Math::max);
          back.add(b);
          if (back.size() == MESSAGES) all.complete(null);
        }), system);
    await(all, Duration.ofSeconds(60));
    assertEquals(MESSAGES, back.size(), "one echo per message, boundaries kept");
    long got = 0;
    for (ByteString b : back) {
      assertEquals(SIZE, b.size());
      got = got * 17 + checksum(b);
    }
    assertEquals(expected, got, "every byte back, in order");
  }

  private static void awaitUsed(MemoryBudget budget, long expected) throws InterruptedException {
    long deadline = System.nanoTime() + StreamsTestKit.WAIT.toNanos();
    while (budget.used() != expected && System.nanoTime() < deadline) Thread.sleep(20);
    assertEquals(expected, budget.used(), "bytes reserved from the budget");
  }

  @Test
  void idleSmallBusyLargeThenSmallAgain() throws Exception {
    ActorSystem<Void> system = StreamsTestKit.system("ElasticRingTest",
        "pekko-rdma.streams.elastic-ring.shrink-after = 200ms");
    try {
      RdmaStreams rdma = StreamsTestKit.streams(system);
      MemoryBudget budget = RdmaRuntime.get(system).memory();
      ResourceCounts start = rdma.liveResources();
      ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      int port = server.localAddress().getPort();
      // an idle connection: it echoes one small message and stays open
      var idle = Source.single(ByteString.fromString("hi")).concat(Source.maybe())
          .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.head(), system);
      assertEquals("hi", await(idle).utf8String());
      awaitUsed(budget, 2 * IDLE_END);

      AtomicLong peak = new AtomicLong();
      echoLarge(rdma, system, port, budget, peak, true);
      long large = 2 * (32L * SIZE + 32L * SIZE); // a busy connection's two ends, ring and buffers
      assertTrue(peak.get() >= 2 * IDLE_END + large / 2,
          "the busy connection grew its rings and buffers: at most " + peak.get() + " bytes");
      // it stays open, idle: after shrink-after (twice: a tick sees it busy, the next idle) it
      // holds what the idle one holds
      awaitUsed(budget, 4 * IDLE_END);
      await(server.unbind());
    } finally {
      system.terminate();
    }
  }

  @Test
  void aShortRunOfSmallMessagesStaysSmall() throws Exception {
    ActorSystem<Void> system = StreamsTestKit.system("ElasticRingTest", "");
    try {
      RdmaStreams rdma = StreamsTestKit.streams(system);
      MemoryBudget budget = RdmaRuntime.get(system).memory();
      ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      // as fast as they come, so that slots and buffers fill; a megabyte and a quarter each way,
      // less than the large ring or send buffers hold (2 MiB each)
      int n = 20_000;
      ByteString message = ByteString.fromArray(new byte[64]);
      AtomicLong peak = new AtomicLong();
      long echoed = await(Source.repeat(message).take(n)
          .via(rdma.outgoingConnection(HOST, server.localAddress().getPort()))
          .runWith(Sink.fold(0L, (count, b) -> {
            peak.accumulateAndGet(budget.used(), Math::max);
            return count + 1;
          }), system), Duration.ofSeconds(60));
      assertEquals(n, echoed);
      assertEquals(2 * IDLE_END, peak.get(), "registered at most, both ends of the connection");
      await(server.unbind());
    } finally {
      system.terminate();
    }
  }

  @Test
  void withNoRoomToGrowTheTrafficGoesOnTheSmallRing() throws Exception {
    long limit = 2 * IDLE_END + 8192; // one connection, and not one large ring more
    ActorSystem<Void> system = StreamsTestKit.system("ElasticRingTest-tight",
        MemoryBudget.SETTING + " = " + limit);
    try {
      RdmaStreams rdma = StreamsTestKit.streams(system);
      MemoryBudget budget = RdmaRuntime.get(system).memory();
      ServerBinding server = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      AtomicLong peak = new AtomicLong();
      echoLarge(rdma, system, server.localAddress().getPort(), budget, peak, false);
      assertTrue(peak.get() <= limit, "never past the budget: " + peak.get());
      awaitUsed(budget, 0);
      await(server.unbind());
    } finally {
      system.terminate();
    }
  }
}
