package dev.pekkordma.streams;

import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/**
 * The other process of {@link PeerProcessFaultTest}: an RDMA stream echo server on the run's
 * provider. Prints {@code LISTENING port}; ends its system when its input closes.
 */
public final class StreamEchoMain {
  private StreamEchoMain() {}

  public static void main(String[] args) throws Exception {
    ActorSystem<Void> system = StreamsTestKit.system("echo", "");
    ServerBinding binding = RdmaStreams.get(system)
        .bindAndHandle(Flow.of(ByteString.class), StreamsTestKit.HOST, 0)
        .toCompletableFuture().get();
    System.out.println("LISTENING " + binding.localAddress().getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // until the test closes our input
    }
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get();
    System.out.println("BYE");
  }
}
