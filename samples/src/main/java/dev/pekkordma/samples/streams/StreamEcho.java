package dev.pekkordma.samples.streams;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.Providers;
import dev.pekkordma.samples.SampleCommandLine;
import dev.pekkordma.samples.SharedOptions;
import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.streams.StreamsMetrics;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The streams layer between two JVMs, as an application uses it: {@code server} echoes every
 * ByteString back ({@code RdmaStreams.bindAndHandle}), {@code client} sends messages through
 * {@code outgoingConnection} and checks that each comes back as it went. Both print what the
 * streams' metrics saw. Exit status 0 when every message came back intact, 1 otherwise, 2 for
 * bad options.
 */
@Command(name = "pekko-rdma stream-echo", mixinStandardHelpOptions = true,
    description = "An echo over RdmaStreams between two JVMs: start the server, then the client.",
    footer = {"", "  pekko-rdma stream-echo server",
        "  pekko-rdma stream-echo client -n 100000 --size 64"})
public final class StreamEcho implements Callable<Integer> {
  private final PrintStream out;

  StreamEcho(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, SampleCommandLine::withClassName,
        new StreamEcho(out), new EchoServerCommand(out), new EchoClientCommand(out));
  }

  @Override
  public Integer call() {
    throw new BadOption("say server or client");
  }

  static ActorSystem<Void> system(String name, String provider) {
    Providers.check(provider);
    return ActorSystem.create(Behaviors.empty(), name, ConfigFactory.parseString(
        "pekko-rdma.provider = " + provider + "\npekko.loglevel = WARNING")
        .withFallback(ConfigFactory.load()));
  }

  static void report(StreamsMetrics m, PrintStream out) {
    out.printf(Locale.ROOT, "metrics: connections opened %d, closed %d, failed %d; sent %d"
        + " messages (%d bytes), received %d (%d bytes); credit stalls %d%n", m.opened(),
        m.closed(), m.failed(), m.messagesSent(), m.bytesSent(), m.messagesReceived(),
        m.bytesReceived(), m.creditStalls());
  }

  @Command(name = "server", mixinStandardHelpOptions = true,
      description = "Echoes what every client sends, until --clients have come and gone (or"
          + " forever).")
  static final class EchoServerCommand implements Callable<Integer> {
    @Option(names = "--bind", paramLabel = "HOST:PORT",
        defaultValue = SharedOptions.DEFAULT_ADDRESS,
        converter = SampleCommandLine.HostPort.class,
        description = "Address to listen on (default: ${DEFAULT-VALUE}).")
    InetSocketAddress bind;

    @Option(names = "--clients", defaultValue = "0",
        description = "Stop after this many clients have closed; 0: never (default).")
    int clients;

    @Option(names = "--provider", defaultValue = "auto",
        description = "soft, native or auto (default: ${DEFAULT-VALUE}).")
    String provider;

    private final PrintStream out;

    EchoServerCommand(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() throws Exception {
      if (clients < 0) throw new BadOption("--clients must be 0 or more");
      ActorSystem<Void> system = system("stream-echo-server", provider);
      try {
        RdmaStreams rdma = RdmaStreams.get(system);
        ServerBinding b = rdma.bindAndHandle(Flow.of(ByteString.class), bind.getHostString(),
            bind.getPort()).toCompletableFuture().get(30, TimeUnit.SECONDS);
        out.println("server: listening on " + b.localAddress().getHostString() + ":"
            + b.localAddress().getPort());
        out.flush();
        if (clients == 0) new CountDownLatch(1).await();
        while (rdma.metrics().closed() + rdma.metrics().failed() < clients) Thread.sleep(50);
        report(rdma.metrics(), out);
        return rdma.metrics().failed() == 0 ? 0 : 1;
      } finally {
        system.terminate();
      }
    }
  }

  @Command(name = "client", mixinStandardHelpOptions = true,
      description = "Sends messages to a server, checks each echo, and prints the rate.")
  static final class EchoClientCommand implements Callable<Integer> {
    @Mixin SharedOptions.ConnectTarget connect;

    @Option(names = {"-n", "--messages"}, defaultValue = "100000",
        description = "Messages to send (default: ${DEFAULT-VALUE}).")
    int messages;

    @Option(names = "--size", defaultValue = "64",
        description = "Bytes a message (default: ${DEFAULT-VALUE}).")
    int size;

    @Option(names = "--provider", defaultValue = "auto",
        description = "soft, native or auto (default: ${DEFAULT-VALUE}).")
    String provider;

    private final PrintStream out;

    EchoClientCommand(PrintStream out) {
      this.out = out;
    }

    @Override
    public Integer call() throws Exception {
      if (messages < 1 || size < 0) throw new BadOption("-n must be positive, --size not negative");
      List<ByteString> sent = new ArrayList<>(messages);
      Random r = new Random(42);
      for (int i = 0; i < messages; i++) {
        byte[] b = new byte[size];
        r.nextBytes(b);
        sent.add(ByteString.fromArrayUnsafe(b));
      }
      ActorSystem<Void> system = system("stream-echo-client", provider);
      try {
        RdmaStreams rdma = RdmaStreams.get(system);
        long t0 = System.nanoTime();
        List<ByteString> back = Source.from(sent)
            .via(rdma.outgoingConnection(connect.address().getHostString(),
                connect.address().getPort()))
            .runWith(Sink.seq(), system).toCompletableFuture().get(10, TimeUnit.MINUTES);
        double seconds = (System.nanoTime() - t0) / 1e9;
        int bad = 0;
        for (int i = 0; i < Math.min(back.size(), sent.size()); i++) {
          if (!back.get(i).equals(sent.get(i))) bad++;
        }
        out.printf(Locale.ROOT, "echoed %d of %d messages of %d bytes in %.3f s: %.0f"
            + " messages/s, %d not as sent%n", back.size(), messages, size, seconds,
            back.size() / seconds, bad);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (rdma.metrics().live() > 0 && System.nanoTime() < deadline) Thread.sleep(10);
        report(rdma.metrics(), out);
        return back.size() == messages && bad == 0 ? 0 : 1;
      } finally {
        system.terminate();
      }
    }
  }
}
