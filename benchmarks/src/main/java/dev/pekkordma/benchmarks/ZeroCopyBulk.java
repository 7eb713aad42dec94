package dev.pekkordma.benchmarks;

import dev.pekkordma.samples.perf.BwResult;
import dev.pekkordma.streams.BulkChunk;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.streams.ReceivedBuffer;
import dev.pekkordma.streams.TransferResult;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;

/**
 * The streams layer's zero-copy bulk pair, as rdma-perf's write_bw moves data: a
 * {@code bulkChunkSink} whose chunks fill a whole slot of the registered send buffer in place
 * (writing only their number into the first word, as write_bw writes nothing), into a
 * {@code bulkBufferSource} whose consumer reads that word, checks the order and releases the
 * slot. One chunk is one write of the chunk size: the bulk settings with {@code buffer-size} set
 * to it. The time runs from the sender's start (the receiver bound already) to the last byte's
 * arrival, as {@link StreamBench}'s throughput.
 */
final class ZeroCopyBulk {
  static final String SETTINGS =
      "pekko-rdma.streams.bulk, buffer-size = the chunk size (one chunk, one write)";

  private ZeroCopyBulk() {}

  static RdmaStreamSettings settings(RdmaStreams rdma, int size) {
    return rdma.bulkSettings().withBufferSize(size);
  }

  static BwResult run(ActorSystem system, String host, int size, long count) throws Exception {
    if (size < Long.BYTES) {
      throw new IllegalArgumentException("zero-copy chunks carry their number in their first 8"
          + " bytes: sizes of at least 8, was " + size);
    }
    RdmaStreams rdma = RdmaStreams.get(system);
    RdmaStreamSettings settings = settings(rdma, size);
    StreamBench.Counter c = new StreamBench.Counter((long) size * count);
    long[] due = {0};
    Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> rx =
        rdma.bulkBufferSource(host, 0, settings)
            .toMat(Sink.foreach((ReceivedBuffer b) -> {
              long n = b.buffer().getLong(0);
              if (n != due[0]) {
                throw new IllegalStateException("chunk " + n + " arrived where " + due[0]
                    + " was due");
              }
              due[0]++;
              int length = b.length();
              b.release();
              c.add(length);
            }), Keep.both())
            .run(system);
    // a receiver that fails ends the wait for its last byte
    rx.second().whenComplete((d, e) -> {
      if (e != null) c.done.completeExceptionally(e);
    });
    InetSocketAddress at = rx.first().toCompletableFuture().get(30, TimeUnit.SECONDS)
        .localAddress();
    long[] next = {0};
    BulkChunk chunk = buffer -> {
      buffer.putLong(0, next[0]++);
      buffer.position(size);
    };
    long start = System.nanoTime();
    CompletableFuture<TransferResult> tx = Source.repeat(chunk).take(count)
        .runWith(rdma.bulkChunkSink(at, settings), system).toCompletableFuture();
    long end = c.awaitDone();
    TransferResult sent = tx.get(30, TimeUnit.SECONDS);
    rx.second().toCompletableFuture().get(30, TimeUnit.SECONDS);
    if (sent.bytesSent() != c.total) {
      throw new IllegalStateException("sent " + sent.bytesSent() + " bytes, received " + c.total);
    }
    return c.result(size, count, start, end);
  }
}
