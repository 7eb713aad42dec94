package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.streams.docs.Echo;
import java.util.List;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The README's example runs as it says: the messages come back, and the provider says itself. */
class DocExamplesTest {
  static final ActorSystem<Void> system = StreamsTestKit.system("DocExamplesTest", "");

  @AfterAll
  static void shutdown() {
    system.terminate();
  }

  @Test
  void theReadmesEchoComesBack() throws Exception {
    ServerBinding binding = await(Echo.server(system, HOST, 0));
    try {
      assertEquals(List.of("hello", "over", "RDMA"),
          await(Echo.client(system, HOST, binding.localAddress().getPort())));
    } finally {
      await(binding.unbind());
    }
  }

  @Test
  void theProviderPrintsWhichServesOnWhatAndWhy() {
    String said = RdmaRuntime.get(system).provider().toString();
    assertTrue(said.matches("the (soft|native) provider, \\d+ device\\(s\\) \\[.+\\] \\("
        + "pekko-rdma\\.provider = .+\\)"), said);
  }
}
