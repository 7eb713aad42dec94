package dev.pekkordma.benchmarks;

import dev.pekkordma.samples.perf.BwResult;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The server of every stream benchmark test: for throughput it counts what arrives and closes
 * its side once it has it all (which ends the client); for latency it echoes; for zero-copy a
 * bulk receiver bound for each run (one chunk, one write of the run's size). It runs in the
 * client's JVM, or in a JVM of its own driven over its standard input ({@link #serve}), the
 * other side of {@link ServerProcess}.
 */
final class BenchServer implements ServerEnd {
  /** What begins each of the server's answers, so that anything else printed is passed over. */
  static final String REPLY = ">> ";

  private final ActorSystem system;
  private final Transport transport;
  private final String test;
  private final String host;
  private final StreamBench.AtomicReferenceCounter current =
      new StreamBench.AtomicReferenceCounter();
  private InetSocketAddress bound; // throughput's and latency's server, bound once
  private CompletionStage<Done> receiving; // zero-copy: the run's receiver
  private long readyAt;

  BenchServer(ActorSystem system, Transport transport, String test, String host) {
    this.system = system;
    this.transport = transport;
    this.test = test;
    this.host = host;
  }

  @Override
  public InetSocketAddress prepare(int size, long count) throws Exception {
    StreamBench.Counter c = new StreamBench.Counter((long) size * Math.max(1, count));
    current.set(c);
    readyAt = System.nanoTime();
    switch (test) {
      case "throughput" -> {
        if (bound == null) bound = bind(() -> {
          StreamBench.Counter run = current.get(); // a connection is one run
          return Flow.fromSinkAndSource(Sink.<ByteString>foreach(b -> run.add(b.size())),
              Source.completionStage(run.done).filter(x -> false)
                  .map(x -> ByteString.emptyByteString()));
        });
        return bound;
      }
      case "latency" -> {
        if (bound == null) bound = bind(Flow::<ByteString>create);
        return bound;
      }
      case "zero-copy" -> {
        Pair<InetSocketAddress, CompletionStage<Done>> rx =
            ZeroCopyBulk.receive(system, host, size, c);
        receiving = rx.second();
        return rx.first();
      }
      default -> throw new IllegalArgumentException("no server for --test " + test);
    }
  }

  private InetSocketAddress bind(java.util.function.Supplier<Flow<ByteString, ByteString, ?>> h)
      throws Exception {
    return transport.bind(system, host, h).toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  @Override
  public BwResult await(int size, long count) throws Exception {
    StreamBench.Counter c = current.get();
    long end = c.awaitDone();
    if (receiving != null) receiving.toCompletableFuture().get(30, TimeUnit.SECONDS);
    return c.result(size, count, readyAt, end);
  }

  @Override
  public long cpuNanos() {
    return ServerEnd.processCpuNanos();
  }

  @Override
  public boolean inThisJvm() {
    return true;
  }

  @Override
  public void close() {
    // bound for the life of the benchmark's actor system, which the benchmark ends
  }

  /**
   * Serves one benchmark's client over {@code commands} (a line each), answering on {@code
   * replies}: {@code run SIZE COUNT} → {@code ready PORT}; {@code await SIZE COUNT} → {@code
   * result PEAK AVERAGE MPPS}; {@code cpu} → {@code cpu NANOS}; {@code quit} or the end of the
   * input ends it. A command that fails answers {@code failed WHY}; the server goes on.
   */
  void serve(InputStream commands, PrintStream replies) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(commands,
        StandardCharsets.US_ASCII));
    for (String line; (line = in.readLine()) != null; ) {
      String[] w = line.trim().split(" ");
      String answer;
      try {
        switch (w[0]) {
          case "run" -> answer = "ready " + prepare(Integer.parseInt(w[1]),
              Long.parseLong(w[2])).getPort();
          case "await" -> {
            BwResult r = await(Integer.parseInt(w[1]), Long.parseLong(w[2]));
            answer = "result " + r.peakMBps() + " " + r.averageMBps() + " " + r.msgRateMpps();
          }
          case "cpu" -> answer = "cpu " + cpuNanos();
          case "quit" -> {
            return;
          }
          default -> answer = "failed no such command: '" + line + "'";
        }
      } catch (Exception | AssertionError e) {
        answer = "failed " + e.toString().replace('\n', ' ');
      }
      replies.println(REPLY + answer);
      replies.flush();
    }
  }
}
