package dev.pekkordma.streams;

import java.time.Duration;
import java.util.zip.CRC32C;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The other process of {@link LossyLinkTest}: sends {@code bytes} of {@link BulkTest#pattern}
 * data (or, with -1, a steady stream until killed) through a stream connection to {@code host
 * port} on the run's provider. Prints {@code CONNECTED}, then {@code SENT bytes crc} and exits 0,
 * or {@code FAILED reason} and exits 1.
 */
public final class StreamSendMain {
  private static final int CHUNK = 16 * 1024;

  private StreamSendMain() {}

  /**
   * {@code bytes} of {@link BulkTest#pattern} data in pieces of 16 KiB ({@code -1}: without end),
   * made as they are pulled.
   */
  static Source<ByteString, NotUsed> patternPieces(long bytes) {
    long[] made = {0};
    return Source.repeat(0).map(x -> {
      int n = (int) (bytes < 0 ? CHUNK : Math.min(CHUNK, bytes - made[0]));
      byte[] b = new byte[n];
      for (int i = 0; i < n; i++) b[i] = BulkTest.pattern(made[0] + i);
      made[0] += n;
      return ByteString.fromArrayUnsafe(b);
    }).takeWhile(b -> b.size() > 0);
  }

  public static void main(String[] args) throws Exception {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    long bytes = Long.parseLong(args[2]);
    ActorSystem<Void> system = StreamsTestKit.system("sender", "");
    CRC32C crc = new CRC32C();
    long[] sent = {0};
    Source<ByteString, ?> data = patternPieces(bytes).map(b -> {
      crc.update(b.asByteBuffer());
      sent[0] += b.size();
      return b;
    });
    if (bytes < 0) data = data.throttle(200, Duration.ofSeconds(1));
    int code = 0;
    try {
      var run = data.viaMat(RdmaStreams.get(system).outgoingConnection(host, port), Keep.right())
          .toMat(Sink.ignore(), Keep.both()).run(system);
      run.first().toCompletableFuture().get();
      System.out.println("CONNECTED");
      System.out.flush();
      run.second().toCompletableFuture().get();
      System.out.println("SENT " + sent[0] + " " + crc.getValue());
    } catch (Exception e) {
      System.out.println("FAILED " + e);
      code = 1;
    }
    System.out.flush();
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get();
    System.exit(code);
  }
}
