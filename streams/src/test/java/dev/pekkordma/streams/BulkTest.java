package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The bulk sink and source: large data by RDMA WRITE into the receiver's ring, drained on close. */
class BulkTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() throws InterruptedException {
    system = StreamsTestKit.system("BulkTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  /** Byte {@code i} of the test data. */
  static byte pattern(long i) {
    return (byte) (i * 31 + (i >>> 11));
  }

  record Received(long bytes, long crc) {}

  /** Bytes the receiving application has taken, counted as it takes them. */
  static final AtomicLong taken = new AtomicLong();

  /** The receiver: binds, and sums and checksums what arrives. */
  static Pair<CompletionStage<ServerBinding>, CompletionStage<Received>> receiver() {
    taken.set(0);
    return rdma.bulkSource(HOST, 0).toMat(Sink.fold(new Object[] {0L, new CRC32C()},
        (acc, b) -> {
          taken.addAndGet(b.length());
          ((CRC32C) acc[1]).update(b.asByteBuffer());
          acc[0] = (Long) acc[0] + b.length();
          return acc;
        }), Keep.both())
        .mapMaterializedValue(p -> Pair.create(p.first(), p.second().thenApply(
            acc -> new Received((Long) acc[0], ((CRC32C) acc[1]).getValue()))))
        .run(system);
  }

  @Test
  void sixtyFourMebibytesFromRegisteredBuffersWithoutCopy() throws Exception {
    ResourceCounts start = rdma.liveResources();
    long total = 64L << 20;
    int chunk = rdma.bulkSettings().bufferSize();
    Pair<CompletionStage<ServerBinding>, CompletionStage<Received>> rx = receiver();
    ServerBinding binding = await(rx.first());
    CRC32C sent = new CRC32C();
    long chunks = total / chunk;
    CompletionStage<TransferResult> tx = Source.range(0, (int) chunks - 1)
        .<BulkChunk>map(n -> buffer -> {
          // the data is made in the registered send buffer itself
          long base = (long) n * chunk;
          for (int i = 0; i < chunk; i++) buffer.put(pattern(base + i));
          sent.update(buffer.duplicate().flip());
        })
        .runWith(rdma.bulkChunkSink(new InetSocketAddress(HOST,
            binding.localAddress().getPort()), rdma.bulkSettings()), system);
    TransferResult result = await(tx);
    // graceful drain: by the time the sender is done, the receiver's application has it all
    assertEquals(total, taken.get(), "taken by the receiver when the sink completed");
    assertEquals(total, result.bytesSent());
    assertEquals(chunks, result.messagesSent());
    assertEquals(new Received(total, sent.getValue()), await(rx.second()));
    awaitResources(rdma, start);
  }

  @Test
  void byteStringsOfAnySizeAreSplitIntoSlots() throws Exception {
    ResourceCounts start = rdma.liveResources();
    Pair<CompletionStage<ServerBinding>, CompletionStage<Received>> rx = receiver();
    ServerBinding binding = await(rx.first());
    CRC32C sent = new CRC32C();
    long[] total = {0};
    // 3 MiB + 1 pieces: each crosses slot boundaries
    int piece = (3 << 20) + 1;
    CompletionStage<TransferResult> tx = Source.range(0, 5).map(n -> {
      byte[] b = new byte[piece];
      for (int i = 0; i < piece; i++) b[i] = pattern(total[0] + i);
      total[0] += piece;
      sent.update(b);
      return ByteString.fromArrayUnsafe(b);
    }).runWith(rdma.bulkSink(HOST, binding.localAddress().getPort()), system);
    TransferResult result = await(tx);
    assertEquals(6L * piece, result.bytesSent());
    assertEquals(new Received(6L * piece, sent.getValue()), await(rx.second()));
    awaitResources(rdma, start);
  }

}
