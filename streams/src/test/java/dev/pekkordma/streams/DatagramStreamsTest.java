package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.SourceQueueWithComplete;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Datagrams through RdmaStreams.datagrams(), on the provider's CM. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DatagramStreamsTest {
  static final AtomicInteger GROUPS = new AtomicInteger();
  final ActorSystem<Void> system = StreamsTestKit.system("DatagramStreamsTest",
      "pekko-rdma.cm.connect-timeout = 1s\n"
          + "pekko-rdma.streams.datagram { send-buffers = 4, receive-buffers = 64,"
          + " resolve-timeout = 3s }");
  final RdmaStreams rdma = StreamsTestKit.streams(system);
  final RdmaDatagrams datagrams = rdma.datagrams();
  final InetSocketAddress local = new InetSocketAddress(HOST, 0);
  ResourceCounts start;

  @BeforeEach
  void start() {
    start = rdma.liveResources();
  }

  @AfterEach
  void backToStart() throws InterruptedException {
    awaitResources(rdma, start);
  }

  @AfterAll
  void shutdown() {
    system.terminate();
  }

  /** An echo server: what arrives goes back to its sender. */
  private Pair<UniqueKillSwitch, CompletionStage<InetSocketAddress>> echo() {
    return Flow.fromGraph(KillSwitches.<Datagram>single())
        .joinMat(datagrams.bindFlow(local), Keep.both()).run(system);
  }

  static ByteString payload(int i) {
    byte[] b = new byte[16 + i % 200];
    for (int k = 0; k < b.length; k++) b[k] = (byte) (i * 31 + k);
    return ByteString.fromArray(b);
  }

  @Test
  void manyDatagramsEchoWithASlowDownstreamAndASenderThatWaits() throws Exception {
    var server = echo();
    InetSocketAddress at = await(server.second());
    // 4 send slots, windows of 32: the sender waits for slots; the downstream takes slowly,
    // and a window never holds more than the 64 receives, so the device drops nothing
    Pair<Pair<SourceQueueWithComplete<Datagram>, CompletionStage<InetSocketAddress>>,
        SinkQueueWithCancel<Datagram>> client = Source.<Datagram>queue(8,
            OverflowStrategy.backpressure())
        .viaMat(datagrams.bindFlow(local), Keep.both())
        .toMat(Sink.queue(), Keep.both()).run(system);
    InetSocketAddress clientAt = await(client.first().second());
    int n = 1024;
    int window = 32;
    for (int w = 0; w < n; w += window) {
      for (int i = w; i < w + window; i++) {
        await(client.first().first().offer(Datagram.create(payload(i), at)));
      }
      List<ByteString> got = new ArrayList<>();
      for (int i = w; i < w + window; i++) {
        Datagram d = await(client.second().pull()).orElseThrow();
        assertEquals(at, d.remote(), "the echo came from the server's endpoint");
        got.add(d.data());
        if (i % 8 == 0) Thread.sleep(1); // a slow downstream
      }
      for (int i = w; i < w + window; i++) {
        assertTrue(got.contains(payload(i)), "datagram " + i + " came back");
      }
    }
    client.first().first().complete();
    client.second().cancel();
    server.first().shutdown();
    assertNotNull(clientAt);
  }

  @Test
  void aSendSinkWaitsForItsSlotsAndEveryDatagramArrives() throws Exception {
    int n = 48; // fewer than the receiver's receives: none can be dropped
    Pair<Pair<CompletableFuture<Optional<Datagram>>, CompletionStage<InetSocketAddress>>,
        CompletionStage<List<Datagram>>> receiver = Source.<Datagram>maybe()
        .viaMat(datagrams.bindFlow(local), Keep.both())
        .take(n).toMat(Sink.seq(), Keep.both()).run(system);
    InetSocketAddress at = await(receiver.first().second());
    CompletionStage<Done> sent = Source.range(0, n - 1)
        .map(i -> Datagram.create(payload(i), at)).runWith(datagrams.sendSink(), system);
    await(sent);
    List<ByteString> got = await(receiver.second()).stream().map(Datagram::data)
        .collect(Collectors.toList());
    assertEquals(IntStream.range(0, n).mapToObj(DatagramStreamsTest::payload)
        .collect(Collectors.toList()), got, "in order, all of them");
    receiver.first().first().complete(Optional.empty());
  }

  @Test
  void aGroupsDatagramsReachEveryMemberFlow() throws Exception {
    InetSocketAddress group = newGroup();
    int k = 10;
    List<CompletionStage<List<Datagram>>> members = new ArrayList<>();
    List<CompletableFuture<Optional<ByteString>>> inputs = new ArrayList<>();
    for (int m = 0; m < 3; m++) {
      var r = Source.<ByteString>maybe()
          .viaMat(datagrams.multicastFlow(group, local), Keep.both())
          .take(k).toMat(Sink.seq(), Keep.both()).run(system);
      await(r.first().second()); // joined
      inputs.add(r.first().first());
      members.add(r.second());
    }
    CompletionStage<Done> sent = Source.range(0, k - 1).map(DatagramStreamsTest::payload)
        .viaMat(datagrams.multicastFlow(group, local), Keep.right())
        .runWith(Sink.ignore(), system);
    for (int m = 0; m < 3; m++) {
      List<ByteString> got = await(members.get(m)).stream().map(Datagram::data)
          .collect(Collectors.toList());
      assertEquals(IntStream.range(0, k).mapToObj(DatagramStreamsTest::payload)
          .collect(Collectors.toList()), got, "member " + m);
    }
    // the sender's flow ends once its last datagram went; the members' take(k) cancelled
    // theirs, which left the group
    await(sent);
    for (var in : inputs) in.complete(Optional.empty());
  }

  @Test
  void aDatagramOverThePathMtuFailsTheStreamNamingBothSizesAndThePeer() throws Exception {
    var server = echo();
    InetSocketAddress at = await(server.second());
    CompletionStage<Done> done = Source.single(Datagram.create(ByteString.fromArray(
            new byte[5000]), at))
        .via(datagrams.bindFlow(local)).runWith(Sink.ignore(), system);
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(done));
    RdmaStreamException f = assertInstanceOf(RdmaStreamException.class, e.getCause());
    assertEquals(at, f.peer());
    // the port's active MTU: 4096 on the software provider, rxe0's netdev's 1024 in the VM
    assertTrue(f.getMessage().contains("5000 bytes") && f.getMessage().matches(
        "(?s).*path MTU of (1024|2048|4096) bytes.*")
        && f.getMessage().contains(SocketAddresses.format(at)), f.getMessage());
    server.first().shutdown();
  }

  @Test
  void anAddressNobodyListensOnFailsTheStreamNamingIt() throws Exception {
    int port;
    try (DatagramSocket s = new DatagramSocket(0, InetAddress.getByName(HOST))) {
      port = s.getLocalPort();
    }
    InetSocketAddress nobody = new InetSocketAddress(HOST, port);
    CompletionStage<Done> done = Source.single(Datagram.create(payload(1), nobody))
        .runWith(datagrams.sendSink(), system);
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(done));
    RdmaStreamException f = assertInstanceOf(RdmaStreamException.class, e.getCause());
    assertEquals(nobody, f.peer());
    assertTrue(f.getMessage().contains("no datagram endpoint listens there"), f.getMessage());
    System.out.println("[streams] " + f.getMessage());
  }

  /** A group of its own for each test: 239.79.x.y, x from this JVM's pid. */
  static InetSocketAddress newGroup() {
    int x = (int) (ProcessHandle.current().pid() % 250) + 1;
    int y = GROUPS.incrementAndGet() % 250 + 1;
    return new InetSocketAddress("239.79." + x + "." + y, 0);
  }
}
