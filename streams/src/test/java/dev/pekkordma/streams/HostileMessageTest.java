package dev.pekkordma.streams;

import static dev.pekkordma.streams.HostileFixture.SLOTS;
import static dev.pekkordma.streams.HostileFixture.SLOT_SIZE;
import static dev.pekkordma.streams.HostileFixture.assertFailsNaming;
import static dev.pekkordma.streams.HostileWire.BATCH;
import static dev.pekkordma.streams.HostileWire.CANCEL;
import static dev.pekkordma.streams.HostileWire.CREDIT;
import static dev.pekkordma.streams.HostileWire.END;
import static dev.pekkordma.streams.HostileWire.FIN;
import static dev.pekkordma.streams.HostileWire.FIN_ACK;
import static dev.pekkordma.streams.HostileWire.MORE;
import static dev.pekkordma.streams.HostileWire.RING;
import static dev.pekkordma.streams.HostileWire.RING_ACK;
import static dev.pekkordma.streams.HostileWire.control;
import static dev.pekkordma.streams.HostileWire.data;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.WcStatus;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Hostile messages after an honest handshake, one named attack each: the connection under
 * attack fails within a bounded time naming the peer and the rule it broke, what its
 * application got is only what the peer wrote within its slots, and everything else of the
 * system goes on.
 */
class HostileMessageTest {
  static HostileFixture fx;

  @BeforeAll
  static void start() throws Exception {
    HostileFixture.assumeSoft();
    fx = new HostileFixture("HostileMessageTest", "");
  }

  @AfterEach
  void afterAttack() throws Exception {
    fx.afterAttack();
  }

  @AfterAll
  static void stop() throws Exception {
    if (fx != null) fx.close();
  }

  private static byte[] pattern(int length, int seed) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) b[i] = (byte) (seed * 31 + i);
    return b;
  }

  /** Connects honestly, runs {@code attack}, expects the server's side to fail with {@code why}. */
  private static void attack(Attack attack, String... why) throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    attack.run(peer, served);
    assertFailsNaming(served.in(), peer.localAddress(), why);
  }

  private interface Attack {
    void run(HostilePeer peer, HostileFixture.Served served) throws Exception;
  }

  @Test
  void aBatchOnASend() throws Exception {
    attack((p, s) -> p.send(data(BATCH, 0)), "protocol error", "data immediate", "SEND");
  }

  /** A BATCH carries whole ByteStrings, each its own element downstream, boundaries kept. */
  @Test
  void anHonestBatchArrivesAsTheByteStringsInIt() throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    byte[][] sent = {pattern(5, 1), new byte[0], pattern(40, 2)};
    peer.writeSlot(0, HostileWire.batch(sent), data(BATCH, 0));
    peer.send(control(FIN, 0));
    List<ByteString> expected = new ArrayList<>();
    for (byte[] e : sent) expected.add(ByteString.fromArray(e));
    assertEquals(expected, StreamsTestKit.await(served.in()));
  }

  @Test
  void aBatchWhoseByteStringClaimsMoreThanFollows() throws Exception {
    byte[] b = HostileWire.batch(pattern(5, 1), pattern(6, 2));
    b[9] = 0x7f; // the second's length: 0x7f000006
    attack((p, s) -> p.writeSlot(0, b, data(BATCH, 0)), "protocol error", "BATCH",
        String.valueOf(0x7f000006), "only 6 follow");
  }

  @Test
  void aBatchWhoseByteStringHasANegativeLength() throws Exception {
    byte[] b = HostileWire.batch(pattern(5, 1));
    b[0] = (byte) 0xff;
    attack((p, s) -> p.writeSlot(0, b, data(BATCH, 0)), "protocol error", "BATCH",
        Integer.toUnsignedString(0xff000005));
  }

  @Test
  void aBatchWithStrayBytesAfterItsLastByteString() throws Exception {
    byte[] whole = HostileWire.batch(pattern(5, 1));
    byte[] b = java.util.Arrays.copyOf(whole, whole.length + 3);
    attack((p, s) -> p.writeSlot(0, b, data(BATCH, 0)), "protocol error", "BATCH",
        "3 bytes after its last ByteString");
  }

  @Test
  void aBatchTooShortForALength() throws Exception {
    attack((p, s) -> p.writeSlot(0, new byte[3], data(BATCH, 0)), "protocol error",
        "BATCH write of 3 bytes");
  }

  @Test
  void aBatchInTheMiddleOfAMessage() throws Exception {
    attack((p, s) -> {
      p.writeSlot(0, pattern(SLOT_SIZE, 1), data(MORE, 0));
      p.writeSlot(1, HostileWire.batch(pattern(5, 1)), data(BATCH, 0));
    }, "protocol error", "BATCH in the middle of a message");
  }

  @Test
  void anUnknownControlCode() throws Exception {
    attack((p, s) -> p.send(control(17, 0)), "protocol error", "control code 17");
  }

  @Test
  void aRingDescribingNoRing() throws Exception {
    attack((p, s) -> p.writeSlot(0, pattern(28, 3), control(RING, 0)), "protocol error",
        "its RING", "magic");
  }

  @Test
  void aRingOfTheWrongLength() throws Exception {
    attack((p, s) -> p.writeSlot(0, pattern(8, 4), control(RING, 0)), "protocol error",
        "a RING is an RDMA WRITE of 28");
  }

  @Test
  void aRingOnASend() throws Exception {
    attack((p, s) -> p.send(control(RING, 0)), "protocol error", "a RING on a SEND");
  }

  @Test
  void aRingAckForNoRingOfOurs() throws Exception {
    attack((p, s) -> p.send(control(RING_ACK, 0)), "protocol error",
        "a RING_ACK with no RING of ours");
  }

  @Test
  void aRingWhoseRingWrapsTheAddressSpace() throws Exception {
    attack((p, s) -> p.writeSlot(0, HostileWire.ring(HostileWire.MAGIC, HostileWire.VERSION,
        -4096L, 7, 4, 4096), control(RING, 0)), "protocol error", "its RING", "wraps");
  }

  @Test
  void aSendWithoutAnImmediate() throws Exception {
    attack((p, s) -> p.sendPlain(0), "protocol error", "immediate");
  }

  @Test
  void aSendWithData() throws Exception {
    // our receives take no data: the device refuses it, and the error says what it means
    attack((p, s) -> p.sendPlain(16), "a SEND with data");
  }

  @Test
  void aDataImmediateWithNoWrite() throws Exception {
    attack((p, s) -> p.send(data(END, 0)), "protocol error", "data", "SEND");
  }

  @Test
  void aControlImmediateOnAWrite() throws Exception {
    attack((p, s) -> p.writeSlot(0, pattern(8, 1), control(CREDIT, 0)), "protocol error",
        "control", "WRITE");
  }

  @Test
  void creditsThatOverflowOurCounter() throws Exception {
    // the server has written nothing: any credit returned is one it never lent
    attack((p, s) -> {
      for (int i = 0; i < 200; i++) p.send(control(CREDIT, 0xFFFFFF));
    }, "protocol error", "credits");
  }

  @Test
  void creditsForMoreWritesThanWereMade() throws Exception {
    attack((p, s) -> {
      s.out().offer(ByteString.fromString("one"));
      p.awaitReceived(1);
      p.send(control(CREDIT, 2));
    }, "protocol error", "2 credits", "1 of our writes");
  }

  @Test
  void moreWritesThanCredits() throws Exception {
    fx.holdServer(); // it takes one message and holds it: at most one slot comes back
    attack((p, s) -> {
      for (int i = 0; i < SLOTS + 2; i++) p.writeSlot(i % SLOTS, pattern(16, i), data(END, 0));
    }, "protocol error", "more writes than", "credits");
  }

  @Test
  void aWriteLongerThanASlot() throws Exception {
    attack((p, s) -> p.writeSlot(0, pattern(SLOT_SIZE + 1, 7), data(END, 0)),
        "protocol error", (SLOT_SIZE + 1) + " bytes", String.valueOf(SLOT_SIZE));
  }

  /**
   * The one that read out of bounds: the n-th write's completion says the whole ring, and the
   * stage copied that many bytes from slot n, past the ring's end. Its application must never
   * see more than a slot per write, nor bytes the peer did not write.
   */
  @Test
  void aWriteWhoseLengthWouldReadPastTheRing() throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    List<ByteString> written = new ArrayList<>();
    for (int i = 0; i < SLOTS - 1; i++) {
      written.add(ByteString.fromArray(pattern(10, i)));
      peer.writeSlot(i, pattern(10, i), data(END, 0));
    }
    long deadline = System.nanoTime() + HostileFixture.WAIT.toNanos();
    while (served.taken().size() < SLOTS - 1 && System.nanoTime() < deadline) Thread.sleep(2);
    peer.writeSlot(0, pattern(SLOTS * SLOT_SIZE, 9), data(END, 0));
    assertFailsNaming(served.in(), peer.localAddress(), "protocol error",
        (SLOTS * SLOT_SIZE) + " bytes");
    assertEquals(written, served.taken());
  }

  @Test
  void aMoreWriteShorterThanASlot() throws Exception {
    attack((p, s) -> p.writeSlot(0, pattern(10, 1), data(MORE, 0)), "protocol error",
        "MORE", "10 bytes");
  }

  @Test
  void finTwice() throws Exception {
    fx.holdServer();
    attack((p, s) -> {
      p.writeSlot(0, pattern(5, 1), data(END, 0)); // held by the application: the FINs wait
      p.send(control(FIN, 0));
      p.send(control(FIN, 0));
    }, "protocol error", "second FIN");
  }

  @Test
  void dataAfterFin() throws Exception {
    fx.holdServer();
    attack((p, s) -> {
      p.writeSlot(0, pattern(5, 1), data(END, 0));
      p.send(control(FIN, 0));
      p.writeSlot(1, pattern(5, 2), data(END, 0));
    }, "protocol error", "after its FIN");
  }

  /** The FIN already reached the application (its input ended): the connection still fails. */
  @Test
  void dataAfterADeliveredFin() throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    peer.send(control(FIN, 0));
    assertEquals(List.of(), StreamsTestKit.await(served.in()));
    peer.writeSlot(0, pattern(5, 1), data(END, 0));
    assertFailsNaming(served.end(), peer.localAddress(), "protocol error", "after its FIN");
  }

  @Test
  void finInTheMiddleOfAMessage() throws Exception {
    fx.holdServer();
    attack((p, s) -> {
      p.writeSlot(0, pattern(5, 1), data(END, 0));
      p.writeSlot(1, pattern(SLOT_SIZE, 2), data(MORE, 0));
      p.send(control(FIN, 0));
    }, "protocol error", "FIN", "MORE");
  }

  @Test
  void finAckBeforeOurFin() throws Exception {
    attack((p, s) -> p.send(control(FIN_ACK, 0)), "protocol error", "FIN_ACK", "before");
  }

  @Test
  void cancelWithANonsenseCount() throws Exception {
    attack((p, s) -> p.send(control(CANCEL, 1000)), "protocol error", "CANCEL", "1000",
        "0 of ours");
  }

  @Test
  void cancelTwice() throws Exception {
    attack((p, s) -> {
      p.send(control(CANCEL, 0));
      p.send(control(CANCEL, 0));
    }, "protocol error", "second CANCEL");
  }

  /** After its CANCEL the peer may still write (it is half-closed), but not lie about credits. */
  @Test
  void creditsAfterCancel() throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    peer.send(control(CANCEL, 0));
    peer.writeSlot(0, pattern(12, 3), data(END, 0));
    long deadline = System.nanoTime() + HostileFixture.WAIT.toNanos();
    while (served.taken().isEmpty() && System.nanoTime() < deadline) Thread.sleep(2);
    peer.send(control(CREDIT, 3));
    assertFailsNaming(served.in(), peer.localAddress(), "protocol error", "3 credits",
        "0 of our writes");
    assertEquals(List.of(ByteString.fromArray(pattern(12, 3))), served.taken());
  }

  @Test
  void aFloodOfEmptySends() throws Exception {
    attack((p, s) -> {
      for (int i = 0; i < 2000; i++) p.send(control(CREDIT, 0));
    }, "protocol error", "no credits");
  }

  @Test
  void aDisconnectInTheMiddleOfAMessage() throws Exception {
    attack((p, s) -> {
      p.writeSlot(0, pattern(SLOT_SIZE, 1), data(MORE, 0));
      assertEquals(WcStatus.SUCCESS, p.awaitSend(p.writeSlot(1, pattern(SLOT_SIZE, 2),
          data(MORE, 0))));
      p.disconnect();
    }, "disconnected", "without closing");
  }

  /**
   * A message that never ends: full MORE writes, each within the credits it was given, so
   * every write is legal but the message the stage puts together grows without end.
   */
  @Test
  void aMessageThatNeverEnds() throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    long deadline = System.nanoTime() + HostileFixture.WAIT.toNanos();
    int written = 0;
    while (!served.in().toCompletableFuture().isDone() && System.nanoTime() < deadline
        && written < 4 * HostileFixture.MAX_MESSAGE / SLOT_SIZE) {
      if (written < SLOTS + peer.creditsReturned()) {
        peer.writeSlot(written % SLOTS, pattern(SLOT_SIZE, written), data(MORE, 0));
        written++;
      } else {
        Thread.sleep(1);
      }
    }
    assertFailsNaming(served.in(), peer.localAddress(), "protocol error",
        "more than " + HostileFixture.MAX_MESSAGE + " bytes", ".max-message-size");
    assertEquals(List.of(), served.taken());
  }

  /** Our own client's messages: max-message-size is the longest the server takes. */
  @Test
  void aMessageOfMaxMessageSizeArrivesAndOneByteMoreFails() throws Exception {
    ByteString longest = ByteString.fromArray(pattern(HostileFixture.MAX_MESSAGE, 3));
    var ok = Source.single(longest)
        .viaMat(fx.rdma.outgoingConnectionWithResult(fx.server(), fx.settings, false),
            Keep.right())
        .to(Sink.ignore()).run(fx.system);
    int port = StreamsTestKit.await(ok.first()).localAddress().getPort();
    StreamsTestKit.await(ok.second()); // closed gracefully: the server's application took it
    assertEquals(List.of(longest), StreamsTestKit.await(fx.served(port).in()));

    var tooLong = Source.single(ByteString.fromArray(pattern(HostileFixture.MAX_MESSAGE + 1, 4)))
        .viaMat(fx.rdma.outgoingConnectionWithResult(fx.server(), fx.settings, false),
            Keep.right())
        .to(Sink.ignore()).run(fx.system);
    port = StreamsTestKit.await(tooLong.first()).localAddress().getPort();
    assertFailsNaming(fx.served(port).in(), new InetSocketAddress(StreamsTestKit.HOST, port),
        "protocol error", "max-message-size");
    // the client learns it only as the server's going
    assertFailsNaming(tooLong.second(), fx.server());
  }

  /** Its writes into another connection's ring, with that ring's own key, are refused. */
  @Test
  void aForgedKeyIntoAnotherConnectionsRing() throws Exception {
    HostilePeer attacker = fx.connectHonestly();
    HostilePeer victim = fx.connectHonestly();
    HostileWire.Ring theirs = victim.granted();
    long wr = attacker.write(theirs.address(), theirs.rkey(), pattern(64, 5), null);
    assertNotEquals(WcStatus.SUCCESS, attacker.awaitSend(wr),
        "a write into another connection's ring succeeded");
    assertFailsNaming(fx.served(attacker).in(), attacker.localAddress());
    // the victim's connection goes on and its data arrives as written
    byte[] mine = pattern(SLOT_SIZE, 11);
    victim.writeSlot(0, mine, data(END, 0));
    victim.send(control(FIN, 0));
    List<ByteString> got = StreamsTestKit.await(fx.served(victim).in());
    assertEquals(List.of(ByteString.fromArray(mine)), got);
  }

  @Test
  void aWriteJustPastTheRing() throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileWire.Ring r = peer.granted();
    long wr = peer.write(r.address() + r.length() - 8, r.rkey(), pattern(16, 1), data(END, 0));
    assertEquals(WcStatus.REM_ACCESS_ERR, peer.awaitSend(wr));
    assertFailsNaming(fx.served(peer).in(), peer.localAddress());
  }

  /** Our client against a server that takes its writes and never gives a slot back. */
  @Test
  void aPeerThatNeverGrantsCreditsMeetsTheIdleTimeout() throws Exception {
    HostilePeer.Listener listener = fx.listen();
    RdmaStreamSettings idle = fx.settings.withIdleTimeout(Duration.ofMillis(500));
    var client = Source.repeat(ByteString.fromArray(pattern(100, 1)))
        .viaMat(fx.rdma.outgoingConnectionWithResult(listener.address(), idle, true),
            Keep.right())
        .toMat(Sink.seq(), Keep.both()).run(fx.system);
    HostilePeer peer = listener.accept(HostilePeer::honestPrivateData);
    assertTrue(peer.established());
    long t0 = System.nanoTime();
    RdmaStreamException e = assertFailsNaming(client.first().second(), listener.address(),
        "no data in either direction", "idle-timeout");
    assertTrue(e instanceof RdmaIdleTimeoutException, e.toString());
    assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(5).toNanos());
    // it wrote exactly the slots the peer's ring has, not one more
    assertEquals(HostilePeer.SLOTS, peer.awaitReceived(HostilePeer.SLOTS).stream()
        .filter(r -> r.data() != null).count());
  }
}
