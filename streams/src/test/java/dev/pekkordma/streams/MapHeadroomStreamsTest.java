package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * On the native provider (rxe in the VM), where each connection's CQ and QP map their queues into
 * the process: once the process's mappings near {@code vm.max_map_count}, less the reserve the
 * setting keeps for the JVM, a new connection is refused naming the setting, the open ones go on,
 * and a connection succeeds again once others close. The clients' system has a reserve that
 * leaves only a few hundred mappings, as twenty thousand connections would; the server's has the
 * default, so that the refusals are the clients' own.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.provider", matches = "native", disabledReason =
    "the software provider maps nothing a connection")
class MapHeadroomStreamsTest {
  private static final String SETTING = "pekko-rdma.native.map-reserve";
  private static final int ROOM = 600; // mappings left for the system and its connections

  private static long count(Path p) throws Exception {
    try (Stream<String> lines = Files.lines(p)) {
      return lines.count();
    }
  }

  @Test
  void pastTheMappingsAConnectionIsRefusedNamingTheSettingAndTheOthersGoOn() throws Exception {
    long limit = Long.parseLong(Files.readAllLines(Path.of("/proc/sys/vm/max_map_count"))
        .get(0).trim());
    long reserve = limit - count(Path.of("/proc/self/maps")) - ROOM;
    ActorSystem<Void> serverSystem = StreamsTestKit.system("MapHeadroomStreamsTest-server", "");
    ActorSystem<Void> system = StreamsTestKit.system("MapHeadroomStreamsTest",
        SETTING + " = " + reserve);
    List<Conn> open = new ArrayList<>();
    try {
      RdmaStreams rdma = StreamsTestKit.streams(system);
      RdmaStreams serverRdma = StreamsTestKit.streams(serverSystem);
      var start = rdma.liveResources();
      var serverStart = serverRdma.liveResources();
      ServerBinding server =
          await(serverRdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
      int port = server.localAddress().getPort();
      String refusal = null;
      for (int i = 0; i < ROOM && refusal == null; i++) {
        Conn c = Conn.open(rdma, system, port);
        try {
          await(c.connected());
        } catch (ExecutionException e) {
          refusal = String.valueOf(e.getCause());
          break;
        }
        assertEquals("hello " + i, echo(c, "hello " + i));
        open.add(c);
      }
      assertNotNull(refusal, "refused within " + ROOM + " connections");
      System.out.println(open.size() + " connections open, then: " + refusal);
      assertTrue(open.size() >= 2, "room for a few connections first: " + refusal);
      assertTrue(refusal.contains(SETTING) && refusal.contains("vm.max_map_count"), refusal);
      for (var c : open) assertEquals("still here", echo(c, "still here"));

      for (int i = 0; i < open.size() / 2; i++) close(open.remove(open.size() - 1));
      Conn again = Conn.open(rdma, system, port);
      assertEquals("again", echo(again, "again"), "room again once others closed");
      open.add(again);
      while (!open.isEmpty()) close(open.remove(open.size() - 1));
      await(server.unbind());
      StreamsTestKit.awaitResources(rdma, start);
      StreamsTestKit.awaitResources(serverRdma, serverStart);
    } finally {
      system.terminate();
      serverSystem.terminate();
      await(system.getWhenTerminated());
      await(serverSystem.getWhenTerminated());
    }
  }

  /** A client connection: what it is sent, whether it connected, what comes back. */
  private record Conn(SourceQueueWithComplete<ByteString> in,
      CompletionStage<OutgoingConnection> connected, SinkQueueWithCancel<ByteString> out) {
    static Conn open(RdmaStreams rdma, ActorSystem<Void> system, int port) {
      var m = Source.<ByteString>queue(4, OverflowStrategy.backpressure())
          .viaMat(rdma.outgoingConnection(HOST, port), Keep.both())
          .toMat(Sink.queue(), Keep.both())
          .run(system);
      return new Conn(m.first().first(), m.first().second(), m.second());
    }
  }

  private static String echo(Conn c, String text) throws Exception {
    await(c.in().offer(ByteString.fromString(text)));
    return await(c.out().pull()).orElseThrow().utf8String();
  }

  private static void close(Conn c) throws Exception {
    c.in().complete();
    assertTrue(await(c.out().pull()).isEmpty(), "the echo ends with the client");
  }
}
