package dev.pekkordma.streams;

import static dev.pekkordma.streams.HostileFixture.assertFailsNaming;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.verbs.WcStatus;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.stream.Stream;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Hostile handshakes: private data that is not a ring we may use, on either side of the
 * connection. Each is refused before anything is set up for it, naming the peer and what is
 * wrong, and the legitimate traffic of the same system goes on.
 */
class HostileHandshakeTest {
  static HostileFixture fx;

  @BeforeAll
  static void start() throws Exception {
    HostileFixture.assumeSoft();
    fx = new HostileFixture("HostileHandshakeTest", "");
  }

  @AfterEach
  void afterAttack() throws Exception {
    fx.afterAttack();
  }

  @AfterAll
  static void stop() throws Exception {
    if (fx != null) fx.close();
  }

  private static Function<HostilePeer, byte[]> ring(long address, int rkey, int slots,
      int slotSize) {
    return p -> new HostileWire.Ring(address, rkey, slots, slotSize).encode();
  }

  /** The peer's real ring with one field changed. */
  private static Function<HostilePeer, byte[]> honestBut(
      Function<HostileWire.Ring, HostileWire.Ring> change) {
    return p -> change.apply(p.honestRing()).encode();
  }

  private static Function<HostilePeer, byte[]> bytes(Function<byte[], byte[]> change) {
    return p -> change.apply(p.honestPrivateData());
  }

  static Stream<Arguments> malformed() {
    return Stream.of(
        Arguments.of("no private data", bytes(b -> new byte[0]), "got 0"),
        Arguments.of("truncated", bytes(b -> Arrays.copyOf(b, 27)), "got 27"),
        Arguments.of("bad magic", bytes(b -> {
          b[0] ^= 0x40;
          return b;
        }), "magic"),
        Arguments.of("another version", bytes(b -> {
          b[4] = 2;
          return b;
        }), "version 2"),
        Arguments.of("reserved bytes set", bytes(b -> {
          b[6] = 1;
          return b;
        }), "reserved"),
        Arguments.of("garbage after the ring", bytes(b -> {
          byte[] longer = Arrays.copyOf(b, 40);
          longer[33] = 7;
          return longer;
        }), "after the ring"),
        Arguments.of("no slots", honestBut(r -> new HostileWire.Ring(r.address(), r.rkey(), 0,
            r.slotSize())), "slots"),
        Arguments.of("negative slots", honestBut(r -> new HostileWire.Ring(r.address(), r.rkey(),
            -1, r.slotSize())), "slots"),
        Arguments.of("more slots than receive-buffers allows", honestBut(r ->
            new HostileWire.Ring(r.address(), r.rkey(), 65537, 1)), "65536"),
        Arguments.of("slot size 0", honestBut(r -> new HostileWire.Ring(r.address(), r.rkey(),
            r.slots(), 0)), "slot size"),
        Arguments.of("slot size above buffer-size's limit", honestBut(r ->
            new HostileWire.Ring(r.address(), r.rkey(), 1, (1 << 30) + 1)), "slot size"),
        Arguments.of("slots x size overflowing an int", ring(1 << 20, 5, 1 << 16, 1 << 16),
            "ring of"),
        Arguments.of("a ring larger than one registration", ring(1 << 20, 5, 4, 1 << 30),
            "ring of"),
        Arguments.of("address + length wrapping", ring(-512, 5, 4, 256), "wraps"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("malformed")
  void aClientWithMalformedPrivateDataIsRefusedNamingItAndWhy(String what,
      Function<HostilePeer, byte[]> privateData, String why) throws Exception {
    HostilePeer peer = fx.connect(privateData);
    assertNotNull(peer.refusal(), "accepted: " + what);
    assertEquals(CmEventType.REJECTED, peer.refusal().type());
    assertFailsNaming(fx.served(peer).in(), peer.localAddress(), "accepting", why);
  }

  /** Our client connects to a hostile server, which answers with {@code privateData}. */
  private static void serverAnswers(Function<HostilePeer, byte[]> privateData, String why)
      throws Exception {
    HostilePeer.Listener listener = fx.listen();
    Pair<Pair<BoundedSourceQueue<ByteString>, CompletionStage<List<ByteString>>>,
        CompletionStage<?>> client = client(listener);
    listener.accept(privateData);
    assertFailsNaming(client.second(), listener.address(), why);
    assertFailsNaming(client.first().second(), listener.address(), why);
  }

  private static Pair<Pair<BoundedSourceQueue<ByteString>, CompletionStage<List<ByteString>>>,
      CompletionStage<?>> client(HostilePeer.Listener listener) {
    var run = Source.<ByteString>queue(16)
        .viaMat(fx.rdma.outgoingConnectionWithResult(listener.address(), fx.settings, true),
            Keep.both())
        .toMat(Sink.seq(), Keep.both()).run(fx.system);
    return Pair.create(Pair.create(run.first().first(), run.second()),
        run.first().second().first());
  }

  @Test
  void aServerAnsweringWithATruncatedRingIsRefused() throws Exception {
    serverAnswers(bytes(b -> Arrays.copyOf(b, 20)), "got 20");
  }

  @Test
  void aServerAnsweringWithAnOverflowingRingIsRefused() throws Exception {
    serverAnswers(ring(1 << 20, 5, 1 << 16, 1 << 16), "ring of");
  }

  @Test
  void aServerAnsweringWithAWrappingRingIsRefused() throws Exception {
    serverAnswers(ring(-1, 5, 1, 2), "wraps");
  }

  @Test
  void aServerAnsweringWithTooManySlotsIsRefused() throws Exception {
    serverAnswers(ring(1 << 20, 5, Integer.MAX_VALUE, 1), "slots");
  }

  /**
   * A ring replayed from another connection (ours, to another server) is of no use to the peer:
   * the server's writes into it fail at the peer's device, the connection fails naming the peer,
   * and the connection whose ring was replayed goes on intact.
   */
  @Test
  void aReplayedRingOfAnotherConnectionIsUselessToThePeer() throws Exception {
    HostilePeer.Listener listener = fx.listen();
    var victim = client(listener);
    HostilePeer owner = listener.accept(HostilePeer::honestPrivateData);
    assertTrue(owner.established());
    // the client's ring, as its CONNECT_REQUEST said it
    byte[] replayed = owner.granted().encode();
    HostilePeer replayer = fx.connect(p -> replayed);
    assertTrue(replayer.established(), "refused: " + replayer.refusal());
    HostileFixture.Served served = fx.served(replayer);
    served.out().offer(ByteString.fromString("into a ring that is not the peer's"));
    assertFailsNaming(served.in(), replayer.localAddress(), "remote access");
    // the client whose ring it was: its data still arrives intact
    byte[] hello = "still intact".getBytes();
    assertEquals(WcStatus.SUCCESS, owner.awaitSend(owner.writeSlot(0, hello,
        HostileWire.data(HostileWire.END, 0))));
    victim.first().first().offer(ByteString.fromString("bye"));
    victim.first().first().complete();
    assertEquals(WcStatus.SUCCESS, owner.awaitSend(owner.send(
        HostileWire.control(HostileWire.FIN, 0))));
    List<HostilePeer.Received> got = owner.awaitReceivedUntil(
        r -> HostileWire.kind(r.imm()) == HostileWire.CONTROL
            && HostileWire.code(r.imm()) == HostileWire.FIN);
    List<byte[]> data = got.stream().filter(r -> r.data() != null)
        .map(HostilePeer.Received::data).toList();
    assertEquals(1, data.size());
    assertArrayEquals("bye".getBytes(), data.get(0));
    owner.send(HostileWire.control(HostileWire.FIN_ACK, 1));
    List<ByteString> clientGot = StreamsTestKit.await(victim.first().second());
    assertEquals(List.of(ByteString.fromArray(hello)), clientGot);
  }

  @Test
  void anHonestHandshakeIsAccepted() throws Exception {
    HostilePeer peer = fx.connect(HostilePeer::honestPrivateData);
    assertTrue(peer.established(), "refused: " + peer.refusal());
    HostileWire.Ring granted = peer.granted();
    assertEquals(HostileFixture.SLOTS, granted.slots());
    assertEquals(HostileFixture.SLOT_SIZE, granted.slotSize());
    assertFalse(fx.served(peer).in().toCompletableFuture().isDone());
  }
}
