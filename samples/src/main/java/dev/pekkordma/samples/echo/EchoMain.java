package dev.pekkordma.samples.echo;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.Providers;
import dev.pekkordma.samples.SampleCommandLine;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the echo server and an echo client in one actor system over the configured provider (the
 * software one where there is no RDMA device). Exit status 0 when every message came back, 1
 * when the echo failed, 2 for bad options.
 */
@Command(name = "pekko-rdma echo", mixinStandardHelpOptions = true,
    description = "The CM echo server and client on the actors, in one JVM: every message sent"
        + " comes back, checked.")
public final class EchoMain implements Callable<Integer> {
  private final PrintStream out;

  @Option(names = {"-n", "--messages"}, defaultValue = "1000",
      description = "Messages to echo (default: ${DEFAULT-VALUE}).")
  int messages;

  @Option(names = "--provider", defaultValue = "auto",
      description = "soft, native or auto (default: ${DEFAULT-VALUE}).")
  String provider;

  EchoMain(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, SampleCommandLine::withClassName,
        new EchoMain(out));
  }

  @Override
  public Integer call() {
    if (messages < 1) throw new BadOption("--messages must be at least 1, was " + messages);
    Providers.check(provider);
    CompletableFuture<EchoClient.EchoResult> result = new CompletableFuture<>();
    ActorSystem<InetSocketAddress> system = ActorSystem.create(guardian(messages, result), "echo",
        ConfigFactory.parseString("pekko-rdma.provider = " + provider)
            .withFallback(ConfigFactory.load()));
    system.getWhenTerminated().toCompletableFuture().join();
    EchoClient.EchoResult r = result.getNow(null);
    if (r == null) {
      out.println("the echo server stopped before the client ran (see the log for why)");
      return 1;
    }
    if (r.failure() != null) {
      out.println("echo failed after " + r.echoed() + " messages: " + r.failure());
      return 1;
    }
    out.printf("echoed %d messages in %.1f ms (%.1f us each)%n", r.echoed(), r.nanos() / 1e6,
        r.nanos() / 1e3 / Math.max(1, r.echoed()));
    return 0;
  }

  static Behavior<InetSocketAddress> guardian(int messages,
      CompletableFuture<EchoClient.EchoResult> result) {
    return Behaviors.setup(ctx -> {
      ctx.watch(ctx.spawn(
          EchoServer.create(new InetSocketAddress("127.0.0.1", 0), ctx.getSelf()), "server"));
      return Behaviors.receive(InetSocketAddress.class)
          .onAnyMessage(address -> {
            ctx.spawn(Behaviors.<EchoClient.EchoResult>setup(c -> {
              c.spawn(EchoClient.create(address, messages, c.getSelf()), "client");
              return Behaviors.receive(EchoClient.EchoResult.class)
                  .onAnyMessage(r -> {
                    result.complete(r);
                    ctx.getSystem().terminate();
                    return Behaviors.stopped();
                  })
                  .build();
            }), "run");
            return Behaviors.same();
          })
          .onSignal(Terminated.class, t -> {
            ctx.getSystem().terminate();
            return Behaviors.same();
          })
          .build();
    });
  }
}
