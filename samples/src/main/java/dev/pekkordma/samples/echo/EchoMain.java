package dev.pekkordma.samples.echo;

import java.net.InetSocketAddress;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Runs the echo server and an echo client in one actor system over the configured provider (the
 * software one where there is no RDMA device): {@code EchoMain [messages]}.
 */
public final class EchoMain {
  private EchoMain() {}

  public static void main(String[] args) {
    int messages = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    ActorSystem<InetSocketAddress> system = ActorSystem.create(guardian(messages), "echo");
    system.getWhenTerminated().toCompletableFuture().join();
  }

  static Behavior<InetSocketAddress> guardian(int messages) {
    return Behaviors.setup(ctx -> {
      ctx.watch(ctx.spawn(
          EchoServer.create(new InetSocketAddress("127.0.0.1", 0), ctx.getSelf()), "server"));
      return Behaviors.receive(InetSocketAddress.class)
          .onAnyMessage(address -> {
            ctx.spawn(Behaviors.<EchoClient.Result>setup(c -> {
              c.spawn(EchoClient.create(address, messages, c.getSelf()), "client");
              return Behaviors.receive(EchoClient.Result.class)
                  .onAnyMessage(r -> {
                    if (r.failure() == null) {
                      System.out.printf("echoed %d messages in %.1f ms (%.1f us each)%n",
                          r.echoed(), r.nanos() / 1e6, r.nanos() / 1e3 / Math.max(1, r.echoed()));
                    } else {
                      System.out.println("echo failed after " + r.echoed() + " messages: "
                          + r.failure());
                    }
                    ctx.getSystem().terminate();
                    return Behaviors.stopped();
                  })
                  .build();
            }), "run");
            return Behaviors.same();
          })
          .onSignal(Terminated.class, t -> {
            System.out.println("the echo server stopped (see the log for why)");
            ctx.getSystem().terminate();
            return Behaviors.same();
          })
          .build();
    });
  }
}
