package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.streams.impl.BindStage;
import dev.pekkordma.streams.impl.Closing;
import dev.pekkordma.streams.impl.Framing;
import dev.pekkordma.streams.impl.StreamsRuntime;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * A peer that connects and goes, again and again: the listener remembers each request only
 * until a flow or the accept timeout has claimed it, not for the binding's life.
 */
class BindStageOffersTest {

  @Test
  void aListenerForgetsTheConnectionsItHandedOut() throws Exception {
    HostileFixture.assumeSoft();
    ActorSystem<Void> system = StreamsTestKit.system("BindStageOffersTest", "");
    RdmaProvider hostile = RdmaProviders.load(ConfigFactory.parseString(
        "pekko-rdma.provider = soft").withFallback(ConfigFactory.load()));
    try {
      StreamsRuntime rt = new StreamsRuntime(system);
      new RdmaStreams(rt);
      ResourceCounts start = rt.provider.liveResources();
      BindStage stage = new BindStage(rt, new InetSocketAddress(HOST, 0), rt.settings,
          Closing.FULL, Framing.MESSAGES);
      AtomicInteger handled = new AtomicInteger();
      CompletionStage<ServerBinding> bound = Source.fromGraph(stage).to(Sink.foreach(c -> {
        c.handleWith(Flow.of(ByteString.class), system);
        handled.incrementAndGet();
      })).run(system);
      InetSocketAddress at = new InetSocketAddress(HOST,
          StreamsTestKit.await(bound).localAddress().getPort());
      int n = 30;
      for (int i = 0; i < n; i++) {
        try (HostilePeer peer = HostilePeer.connect(hostile, at,
            HostilePeer::honestPrivateData)) {
          assertTrue(peer.established(), "refused: " + peer.refusal());
        }
      }
      long deadline = System.nanoTime() + StreamsTestKit.WAIT.toNanos();
      while (handled.get() < n && System.nanoTime() < deadline) Thread.sleep(2);
      assertEquals(n, handled.get()); // the last one's handler may finish after its handshake
      assertTrue(stage.offersHeld() <= 1, stage.offersHeld() + " of " + n
          + " requests still held");
      StreamsTestKit.await(StreamsTestKit.await(bound).unbind());
      StreamsTestKit.awaitResources(new RdmaStreams(rt), start);
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), hostile.liveResources());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get();
      hostile.close();
    }
  }
}
