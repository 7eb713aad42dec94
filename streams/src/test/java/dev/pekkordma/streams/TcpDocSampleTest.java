package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.streams.tcpdocs.DocSample;
import dev.pekkordma.streams.tcpdocs.RdmaDocSample;
import dev.pekkordma.streams.tcpdocs.TcpDocSample;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Pekko's own Tcp samples (its documentation's echo server, chat server and REPL client, {@link
 * TcpDocSample}) compiled a second time with each {@code Tcp.get(system)} made {@code
 * RdmaStreams.get(system)} and nothing else ({@link RdmaDocSample}), and both run: what the
 * README promises of the switch.
 */
class TcpDocSampleTest {
  static final Path SAMPLES = Path.of("src/test/java/dev/pekkordma/streams/tcpdocs");
  static ActorSystem system;

  @BeforeAll
  static void start() {
    // a classic system, as the docs' samples take
    system = ActorSystem.create("TcpDocSampleTest", StreamsTestKit.config(""));
  }

  @AfterAll
  static void stop() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  private static DocSample sample(String transport) {
    return transport.equals("tcp") ? new TcpDocSample(system) : new RdmaDocSample(system);
  }

  /** The RDMA sample is the Tcp one with the one line changed: nothing else differs. */
  @Test
  void theRdmaSampleIsTheTcpSampleWithTheOneLineChanged() throws Exception {
    List<String> tcp = Files.readAllLines(SAMPLES.resolve("TcpDocSample.java"));
    List<String> rdma = new ArrayList<>(Files.readAllLines(SAMPLES.resolve("RdmaDocSample.java")));
    assertEquals(1, rdma.stream().filter(l -> l.equals("import dev.pekkordma.streams.RdmaStreams;"))
        .count(), "its one import more");
    rdma.remove("import dev.pekkordma.streams.RdmaStreams;");
    assertEquals(tcp.size(), rdma.size());
    int switched = 0;
    for (int i = 0; i < tcp.size(); i++) {
      // its own name, in its declaration and constructor
      String r = rdma.get(i).replace("class RdmaDocSample", "class TcpDocSample")
          .replace("public RdmaDocSample(", "public TcpDocSample(");
      if (!r.equals(tcp.get(i))) {
        assertEquals(tcp.get(i), r.replace("RdmaStreams.get(system)", "Tcp.get(system)"),
            "line " + (i + 1) + " differs in more than Tcp.get(system)");
        switched++;
      }
    }
    assertEquals(4, switched, "each Tcp.get(system) of the sample, and only those");
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void theEchoServerAndAClientRun(String transport) throws Exception {
    DocSample s = sample(transport);
    ServerBinding binding = await(s.echoServer(HOST, 0));
    int port = binding.localAddress().getPort();
    List<String> back = await(s.echoClient(HOST, port, List.of("Hello world", "What a lovely day")));
    assertEquals(List.of("Hello world!!!", "What a lovely day!!!"), back);
    await(binding.unbind());
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "rdma"})
  void theChatServerAndTheReplClientRun(String transport) throws Exception {
    DocSample s = sample(transport);
    ServerBinding binding = await(s.chatServer(HOST, 0));
    await(s.replClient(HOST, binding.localAddress().getPort()));
    // as the docs' own test expects
    for (String command : List.of("Hello world", "What a lovely day", "BYE")) {
      assertEquals(command, s.commands().poll(StreamsTestKit.WAIT.toMillis(),
          TimeUnit.MILLISECONDS));
    }
    await(binding.unbind());
  }
}
