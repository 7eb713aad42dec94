package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.runtime.RdmaRuntime;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * The streams start only what they use: nothing at {@code RdmaStreams.get} (no actor tree, no
 * poller), and for a first connection the CM's thread and channel and one completion hub (a
 * channel; a thread only where the provider's events come from the kernel), and on the software
 * provider no CM event of its set-up passes the CM's thread.
 */
class RuntimeFootprintTest {
  @Test
  void getStartsNothingAndAFirstConnectionOnlyWhatItUses() throws Exception {
    ActorSystem<Void> system = StreamsTestKit.system("RuntimeFootprintTest", "");
    try {
      RdmaStreams rdma = RdmaStreams.get(system);
      RdmaRuntime runtime = RdmaRuntime.get(system);
      assertEquals(List.of(), pollerThreads(system), "threads after RdmaStreams.get");
      assertEquals(new RdmaRuntime.Footprint(false, 0, 0), runtime.footprint());

      ServerBinding binding =
          await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      // a connection that stays open until the end is given
      CompletableFuture<ByteString> echoed = new CompletableFuture<>();
      Pair<CompletableFuture<Optional<ByteString>>, CompletionStage<Done>> client =
          Source.<ByteString>maybe().prepend(Source.single(ByteString.fromString("hello")))
              .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
              .toMat(Sink.foreach(echoed::complete), Keep.both()).run(system);
      assertEquals("hello", await(echoed).utf8String());

      RdmaRuntime.Footprint used = runtime.footprint();
      assertEquals(true, used.cm(), "the CM dispatcher started");
      assertEquals(1, used.hubs(), "client and server share their device context's hub");
      assertEquals(StreamsTestKit.NATIVE ? 1 : 0, used.hubThreads(),
          "a hub needs a thread only for the kernel's events");
      assertEquals(used.threads(), pollerThreads(system).size(),
          "poller threads: " + pollerThreads(system));
      if (!StreamsTestKit.NATIVE) {
        assertEquals(0, runtime.cm().deliveredOnItsThread(),
            "the software CM's events go from the thread that posts them to the stage");
      }
      client.first().complete(Optional.empty());
      await(client.second());
      await(binding.unbind());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get();
    }
  }

  /** The live threads of the system's pollers. */
  private static List<String> pollerThreads(ActorSystem<?> system) {
    String prefix = system.name() + "-pekko-rdma-";
    return Arrays.stream(ManagementFactory.getThreadMXBean().dumpAllThreads(false, false))
        .map(ThreadInfo::getThreadName).filter(n -> n.startsWith(prefix)).toList();
  }
}
