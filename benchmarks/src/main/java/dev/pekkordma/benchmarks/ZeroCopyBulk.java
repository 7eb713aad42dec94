package dev.pekkordma.benchmarks;

import dev.pekkordma.streams.BulkChunk;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.streams.ReceivedBuffer;
import dev.pekkordma.streams.TransferResult;
import java.net.InetSocketAddress;
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

  /**
   * Binds a receiver for chunks of {@code size} bytes that counts them into {@code counter}
   * (failing the counter if it fails); where it listens, and its completion.
   */
  static Pair<InetSocketAddress, CompletionStage<Done>> receive(ActorSystem system, String host,
      int size, StreamBench.Counter counter) throws Exception {
    RdmaStreams rdma = RdmaStreams.get(system);
    long[] due = {0};
    Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> rx =
        rdma.bulkBufferSource(host, 0, settings(rdma, checked(size)))
            .toMat(Sink.foreach((ReceivedBuffer b) -> {
              long n = b.buffer().getLong(0);
              if (n != due[0]) {
                throw new IllegalStateException("chunk " + n + " arrived where " + due[0]
                    + " was due");
              }
              due[0]++;
              int length = b.length();
              b.release();
              counter.add(length);
            }), Keep.both())
            .run(system);
    // a receiver that fails ends the wait for its last byte
    rx.second().whenComplete((d, e) -> {
      if (e != null) counter.done.completeExceptionally(e);
    });
    InetSocketAddress at = rx.first().toCompletableFuture().get(30, TimeUnit.SECONDS)
        .localAddress();
    return Pair.create(at, rx.second());
  }

  /** Sends {@code count} chunks of {@code size} bytes, numbered, to the receiver at {@code at}. */
  static CompletionStage<TransferResult> send(ActorSystem system, InetSocketAddress at, int size,
      long count) {
    RdmaStreams rdma = RdmaStreams.get(system);
    long[] next = {0};
    BulkChunk chunk = buffer -> {
      buffer.putLong(0, next[0]++);
      buffer.position(size);
    };
    return Source.repeat(chunk).take(count)
        .runWith(rdma.bulkChunkSink(at, settings(rdma, checked(size))), system);
  }

  /** Checks what the sender reports against what was due. */
  static void checkSent(TransferResult sent, int size, long count) {
    if (sent.bytesSent() != (long) size * count) {
      throw new IllegalStateException("sent " + sent.bytesSent() + " bytes of "
          + (long) size * count);
    }
  }

  private static int checked(int size) {
    if (size < Long.BYTES) {
      throw new IllegalArgumentException("zero-copy chunks carry their number in their first 8"
          + " bytes: sizes of at least 8, was " + size);
    }
    return size;
  }
}
