package dev.pekkordma.samples.echo;

import dev.pekkordma.actors.TestRdma;
import java.net.InetSocketAddress;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The other process of {@link EchoPeerStoppedTest}: the echo server in an actor system of its
 * own. Prints {@code BOUND port}; ends when its input closes.
 */
public final class EchoServerMain {
  private EchoServerMain() {}

  public static void main(String[] args) throws Exception {
    ActorSystem<InetSocketAddress> system = ActorSystem.create(
        Behaviors.setup(ctx -> {
          ctx.spawn(EchoServer.create(new InetSocketAddress(TestRdma.CM_HOST, 0), ctx.getSelf()),
              "server");
          return Behaviors.receiveMessage(bound -> {
            System.out.println("BOUND " + bound.getPort());
            System.out.flush();
            return Behaviors.same();
          });
        }), "echo-server", TestRdma.config(TestRdma.CM_DEVICE, ""));
    while (System.in.read() >= 0) {
      // until the test closes our input
    }
    system.terminate();
  }
}
