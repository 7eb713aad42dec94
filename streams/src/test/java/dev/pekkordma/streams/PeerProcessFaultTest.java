package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.conformance.PeerProcess;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A stream to a server in another process that stops (SIGSTOP, past the QP's transport timeout)
 * or dies (SIGKILL) mid-transfer: the stream fails in bounded time naming the peer and why, and
 * every resource of this side is freed.
 */
class PeerProcessFaultTest {
  private static final ByteString CHUNK = ByteString.fromArray(new byte[16 * 1024]);
  private static final ByteString SMALL = ByteString.fromArray(new byte[1024]);
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() throws InterruptedException {
    system = StreamsTestKit.system("PeerProcessFaultTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void aServerStoppedPastTheTransportTimeoutFailsTheStreamNamingIt() throws Exception {
    // on a real device the stopped process's NIC (rxe: its kernel) goes on acknowledging; the
    // stream then waits for credits its application never returns, as a Tcp stream would
    Assumptions.assumeFalse(StreamsTestKit.NATIVE, "SIGSTOP stops the software provider's"
        + " NIC with its process, not a real one");
    ResourceCounts start = rdma.liveResources();
    try (PeerProcess server = PeerProcess.start(StreamEchoMain.class)) {
      int port = Integer.parseInt(server.awaitLine("LISTENING ", PeerProcess.START));
      AtomicLong echoed = new AtomicLong();
      Pair<SourceQueueWithComplete<ByteString>, CompletionStage<Done>> client =
          Source.<ByteString>queue(4, OverflowStrategy.fail())
              .via(rdma.outgoingConnection(HOST, port))
              .toMat(Sink.foreach(b -> echoed.addAndGet(b.size())), Keep.both())
              .run(system);
      // one small message, echoed: the server's ring (4 slots while it is small) then has room
      // for the next whatever its credits say, so the write after the stop goes out and is
      // never acknowledged (a sender without credits would have nothing in flight to time out)
      client.first().offer(SMALL);
      awaitEchoes(echoed, SMALL.size());
      server.signal("STOP");
      long stopped = System.nanoTime();
      try {
        client.first().offer(SMALL);
        RdmaStreamException e = failure(client.second(), Duration.ofSeconds(60));
        long took = (System.nanoTime() - stopped) / 1_000_000;
        assertTrue(e.getMessage().contains(HOST + ":" + port), e.getMessage());
        // the soft CM's timeout: 8 tries of 0.54 s
        assertTrue(e.getMessage().contains("no answer"), e.getMessage());
        assertTrue(took > 3000 && took < 30_000, "failed after " + took + " ms");
      } finally {
        server.signal("CONT");
      }
    }
    awaitResources(rdma, start);
  }

  @Test
  void aServerKilledMidTransferFailsTheStreamNamingIt() throws Exception {
    ResourceCounts start = rdma.liveResources();
    try (PeerProcess server = PeerProcess.start(StreamEchoMain.class)) {
      int port = Integer.parseInt(server.awaitLine("LISTENING ", PeerProcess.START));
      AtomicLong echoed = new AtomicLong();
      CompletionStage<Done> client = streamTo(port, echoed);
      awaitEchoes(echoed, 10 * CHUNK.size());
      server.killHard();
      RdmaStreamException e = failure(client, Duration.ofSeconds(60));
      assertTrue(e.getMessage().contains(HOST + ":" + port), e.getMessage());
    }
    awaitResources(rdma, start);
  }

  /** A gentle stream, which the server keeps up with even on a busy machine. */
  private static CompletionStage<Done> streamTo(int port, AtomicLong echoed) {
    return Source.repeat(CHUNK).throttle(100, Duration.ofSeconds(1))
        .via(rdma.outgoingConnection(HOST, port))
        .runWith(Sink.foreach(b -> echoed.addAndGet(b.size())), system);
  }

  private static void awaitEchoes(AtomicLong echoed, long bytes) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (echoed.get() < bytes) {
      assertTrue(System.nanoTime() < deadline, "the echo never got going");
      Thread.sleep(10);
    }
  }

  private static RdmaStreamException failure(CompletionStage<Done> client, Duration within) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> client.toCompletableFuture().get(within.toMillis(), TimeUnit.MILLISECONDS));
    return assertInstanceOf(RdmaStreamException.class, e.getCause());
  }
}
