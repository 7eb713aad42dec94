package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigException;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Connections over bind and outgoingConnection, as Tcp's, on the software provider. */
class ConnectionTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() throws InterruptedException {
    system = StreamsTestKit.system("ConnectionTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  private static ServerBinding echoServer() throws Exception {
    return await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
  }

  private static InetSocketAddress address(ServerBinding b) {
    return new InetSocketAddress(HOST, b.localAddress().getPort());
  }

  @Test
  void echoKeepsMessageBoundaries() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding binding = echoServer();
    List<ByteString> sent = new ArrayList<>();
    sent.add(ByteString.emptyByteString());
    for (int i = 1; i <= 20; i++) sent.add(ByteString.fromString("message " + "x".repeat(i * 7)));
    sent.add(ByteString.emptyByteString());
    List<ByteString> got = await(Source.from(sent)
        .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
        .runWith(Sink.seq(), system));
    assertEquals(sent, got);
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void manyMessagesArriveInOrderThroughFewCredits() throws Exception {
    ResourceCounts start = rdma.liveResources();
    RdmaStreamSettings few = rdma.settings().withReceiveBuffers(3).withSendBuffers(2)
        .withSignalEvery(2).withInlineThreshold(64);
    ServerBinding binding = await(rdma.bind(HOST, 0, few, false)
        .to(Sink.foreach(c -> c.handleWith(Flow.of(ByteString.class), system))).run(system));
    Random random = new Random(7);
    List<ByteString> sent = new ArrayList<>();
    for (int i = 0; i < 5000; i++) {
      byte[] b = new byte[random.nextInt(3000)];
      random.nextBytes(b);
      if (b.length >= 4) b[0] = (byte) i;
      sent.add(ByteString.fromArray(b));
    }
    TransferResult[] result = new TransferResult[1];
    List<ByteString> got = await(Source.from(sent)
        .viaMat(rdma.outgoingConnectionWithResult(address(binding), few, true),
            (a, b) -> b.second().thenAccept(r -> result[0] = r))
        .runWith(Sink.seq(), system));
    assertEquals(sent.size(), got.size());
    for (int i = 0; i < sent.size(); i++) assertEquals(sent.get(i), got.get(i), "message " + i);
    Thread.sleep(50);
    assertEquals(5000, result[0].messagesSent());
    assertEquals(5000, result[0].messagesReceived());
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void aSlowConsumerSlowsTheProducerWithBoundedBuffers() throws Exception {
    ResourceCounts start = rdma.liveResources();
    RdmaStreamSettings small = rdma.settings().withReceiveBuffers(4).withSendBuffers(4);
    AtomicInteger produced = new AtomicInteger();
    AtomicInteger consumed = new AtomicInteger();
    AtomicInteger worst = new AtomicInteger();
    ByteString chunk = ByteString.fromArray(new byte[4096]);
    ServerBinding binding = await(rdma.bind(HOST, 0, small, false)
        .to(Sink.foreach(c -> c.handleWith(Flow.fromSinkAndSource(Sink.ignore(),
            Source.range(1, 200).map(i -> {
              produced.incrementAndGet();
              return chunk;
            })), system))).run(system));
    long t0 = System.nanoTime();
    int n = await(Source.<ByteString>empty()
        .via(rdma.outgoingConnection(address(binding), small, true))
        .throttle(1, Duration.ofMillis(3))
        .map(b -> {
          int c = consumed.incrementAndGet();
          worst.accumulateAndGet(produced.get() - c, Math::max);
          return b;
        })
        .runWith(Sink.fold(0, (a, b) -> a + 1), system));
    long millis = (System.nanoTime() - t0) / 1_000_000;
    assertEquals(200, n);
    assertTrue(millis >= 500, "the consumer set the pace: " + millis + " ms");
    // what the producer may be ahead by: the receiver's 4 slots (while its small ring gives way
    // to the large one, the small one's 4 too), the element the sending stage holds, and the
    // one the throttle holds
    assertTrue(worst.get() <= 4 + 4 + 1 + 2, "the producer ran ahead by " + worst.get());
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void halfCloseLetsTheClientReadAfterItsOutputCompleted() throws Exception {
    ResourceCounts start = rdma.liveResources();
    // the server answers only once the client has completed: with the count it received
    ServerBinding binding = await(rdma.bindAndHandle(Flow.of(ByteString.class)
        .fold(0, (n, b) -> n + 1).map(n -> ByteString.fromString("got " + n)), HOST, 0));
    List<ByteString> got = await(Source.from(List.of(ByteString.fromString("a"),
            ByteString.fromString("b"), ByteString.fromString("c")))
        .via(rdma.outgoingConnection(HOST, binding.localAddress().getPort()))
        .runWith(Sink.seq(), system));
    assertEquals(List.of(ByteString.fromString("got 3")), got);
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void anIdleConnectionFailsNamingTheTimeout() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding binding = await(rdma.bindAndHandle(
        Flow.fromSinkAndSource(Sink.ignore(), Source.never()), HOST, 0));
    RdmaStreamSettings idle = rdma.settings().withIdleTimeout(Duration.ofMillis(300));
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(
        Source.<ByteString>never().via(rdma.outgoingConnection(address(binding), idle, true))
            .runWith(Sink.ignore(), system)));
    RdmaIdleTimeoutException timeout = assertInstanceOf(RdmaIdleTimeoutException.class,
        e.getCause());
    assertTrue(timeout.getMessage().contains("pekko-rdma.streams.idle-timeout"),
        timeout.getMessage());
    assertTrue(timeout.getMessage().contains(HOST + ":" + binding.localAddress().getPort()),
        timeout.getMessage());
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void unbindStopsListeningAndCompletesTheSource() throws Exception {
    ResourceCounts start = rdma.liveResources();
    var pair = rdma.bind(HOST, 0).toMat(Sink.ignore(),
        org.apache.pekko.stream.javadsl.Keep.both()).run(system);
    ServerBinding binding = await(pair.first());
    int port = binding.localAddress().getPort();
    await(binding.unbind());
    await(binding.whenUnbound());
    await(pair.second()); // the source of connections completed
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(
        Source.single(ByteString.fromString("x"))
            .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.seq(), system)));
    RdmaStreamException refused = assertInstanceOf(RdmaStreamException.class, e.getCause());
    assertTrue(refused.getMessage().contains(HOST + ":" + port), refused.getMessage());
    awaitResources(rdma, start);
  }

  @Test
  void oversizeChunksAreSplitAndPutTogether() throws Exception {
    ResourceCounts start = rdma.liveResources();
    RdmaStreamSettings tiny = rdma.settings().withBufferSize(1024).withReceiveBuffers(4);
    ServerBinding binding = await(rdma.bind(HOST, 0, tiny, false)
        .to(Sink.foreach(c -> c.handleWith(Flow.of(ByteString.class), system))).run(system));
    byte[] big = new byte[100_000];
    new Random(1).nextBytes(big);
    List<ByteString> sent = List.of(ByteString.fromString("before"), ByteString.fromArray(big),
        ByteString.fromString("after"));
    List<ByteString> got = await(Source.from(sent)
        .via(rdma.outgoingConnection(address(binding), tiny, true)).runWith(Sink.seq(), system));
    assertEquals(sent, got);
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void oversizeChunksAreRejectedNamingTheSetting() throws Exception {
    ResourceCounts start = rdma.liveResources();
    ServerBinding binding = echoServer();
    RdmaStreamSettings strict = rdma.settings().withBufferSize(1024)
        .withOversize(RdmaStreamSettings.Oversize.FAIL);
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(
        Source.single(ByteString.fromArray(new byte[5000]))
            .via(rdma.outgoingConnection(address(binding), strict, true))
            .runWith(Sink.seq(), system)));
    String m = e.getCause().getMessage();
    assertTrue(m.contains("5000 bytes") && m.contains("pekko-rdma.streams.buffer-size")
        && m.contains("oversize-chunks"), m);
    await(binding.unbind());
    awaitResources(rdma, start);
  }

  @Test
  void badSettingsAreNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> rdma.settings().withSignalEvery(0));
    assertTrue(e.getMessage().contains("pekko-rdma.streams.signal-every"), e.getMessage());
    ConfigException c = assertThrows(ConfigException.class, () -> RdmaStreamSettings.create(
        StreamsTestKit.config("pekko-rdma.streams.receive-buffers = 0")));
    assertTrue(c.getMessage().contains("pekko-rdma.streams.receive-buffers"), c.getMessage());
    c = assertThrows(ConfigException.class, () -> RdmaStreamSettings.create(
        StreamsTestKit.config("pekko-rdma.streams.oversize-chunks = drop")));
    assertTrue(c.getMessage().contains("pekko-rdma.streams.oversize-chunks"), c.getMessage());
    c = assertThrows(ConfigException.class, () -> RdmaStreamSettings.bulk(
        StreamsTestKit.config("pekko-rdma.streams.bulk.buffer-size = 0")));
    assertTrue(c.getMessage().contains("pekko-rdma.streams.bulk.buffer-size"), c.getMessage());
    c = assertThrows(ConfigException.class, () -> RdmaStreamSettings.create(
        StreamsTestKit.config("pekko-rdma.streams.max-message-size = 3GiB")));
    assertTrue(c.getMessage().contains("pekko-rdma.streams.max-message-size"), c.getMessage());
    assertEquals(64 << 20, rdma.settings().maxMessageSize());
    // the datagram stages' settings keep their path; their defaults are shared with the actors'
    c = assertThrows(ConfigException.class, () -> DatagramSettings.from(
        StreamsTestKit.config("pekko-rdma.streams.datagram.peer-ttl = 0s").resolve(),
        DatagramSettings.STREAMS));
    assertTrue(c.getMessage().contains("pekko-rdma.streams.datagram.peer-ttl"), c.getMessage());
    DatagramSettings d = DatagramSettings.from(StreamsTestKit.config(
        "pekko-rdma.streams.datagram.send-buffers = 5").resolve(), DatagramSettings.STREAMS);
    assertEquals(5, d.sendBuffers());
    assertEquals(64, d.maxPeers());
  }
}
