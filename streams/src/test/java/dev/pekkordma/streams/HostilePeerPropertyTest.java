package dev.pekkordma.streams;

import static dev.pekkordma.streams.HostileFixture.MAX_MESSAGE;
import static dev.pekkordma.streams.HostileFixture.SLOTS;
import static dev.pekkordma.streams.HostileFixture.SLOT_SIZE;
import static dev.pekkordma.streams.HostileFixture.WAIT;
import static dev.pekkordma.streams.HostileFixture.assertFailsNaming;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEventType;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AfterTry;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.lifecycle.LifecycleContext;
import net.jqwik.api.lifecycle.SkipExecutionHook;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * Generated hostile peers against a live server (and, for the handshake, a live client): forged,
 * truncated, oversized and replayed private data, absurd ring geometry, and sequences of writes
 * and sends with any immediates, lengths, slots and keys. Whatever is generated, the stream
 * under attack fails (or is refused) within a bounded time naming the peer, every write lands
 * inside the ring it was granted or is refused, and after each try the fixture checks the
 * legitimate connection, the threads and both providers' resources (@AfterTry).
 */
@AddLifecycleHook(HostilePeerPropertyTest.SoftOnly.class)
class HostilePeerPropertyTest {
  static HostileFixture fx;

  /** The hostile peer runs on the software provider. */
  static final class SoftOnly implements SkipExecutionHook {
    @Override
    public SkipResult shouldBeSkipped(LifecycleContext context) {
      if (!StreamsTestKit.NATIVE) return SkipResult.doNotSkip();
      System.out.println("[streams] skipped: the hostile peer runs on the software provider");
      return SkipResult.skip("the hostile peer runs on the software provider");
    }
  }

  @BeforeContainer
  static void start() throws Exception {
    fx = new HostileFixture("HostilePeerPropertyTest", "");
  }

  @AfterContainer
  static void stop() throws Exception {
    if (fx != null) fx.close();
  }

  @AfterTry
  void afterAttack() throws Exception {
    fx.afterAttack();
  }

  // ------------------------------------------------------------------ handshakes

  /** Private data made from the peer's honest ring: cut, extended, bits flipped, or random. */
  record Forgery(boolean random, byte[] bytes, int length, int[] flips) {
    byte[] apply(HostilePeer peer) {
      byte[] base = random ? bytes : peer.honestPrivateData();
      byte[] data = Arrays.copyOf(base, length);
      for (int f : flips) {
        if (length > 0) data[Math.floorMod(f, length)] ^= (byte) (1 << Math.floorMod(f >> 8, 8));
      }
      return data;
    }
  }

  @Provide
  Arbitrary<Forgery> forgeries() {
    return Combinators.combine(Arbitraries.of(false, false, false, true),
        Arbitraries.bytes().array(byte[].class).ofMaxSize(56),
        Arbitraries.oneOf(Arbitraries.just(28), Arbitraries.integers().between(0, 56)),
        Arbitraries.integers().array(int[].class).ofMaxSize(3))
        .as((random, bytes, length, flips) -> new Forgery(random, bytes,
            random ? Math.min(length, bytes.length) : length, flips));
  }

  /**
   * A client's forged private data: refused (REJECTED, the server's side naming it) or, where
   * it still reads as a ring within the limits, a connection whose first write from the server
   * lands in the peer's own memory or fails naming the peer.
   */
  @Property(tries = 30)
  void forgedPrivateDataIsRefusedOrHarmless(@ForAll("forgeries") Forgery forgery)
      throws Exception {
    HostilePeer peer = fx.connect(forgery::apply);
    HostileFixture.Served served = fx.served(peer);
    if (!peer.established()) {
      assertEquals(CmEventType.REJECTED, peer.refusal().type());
      assertFailsNaming(served.in(), peer.localAddress(), "accepting");
      return;
    }
    served.out().offer(ByteString.fromString("ping"));
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (peer.received().stream().noneMatch(r -> r.data() != null)
        && !served.in().toCompletableFuture().isDone() && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    if (served.in().toCompletableFuture().isDone()) {
      assertFailsNaming(served.in(), peer.localAddress());
    } else {
      assertTrue(peer.received().stream().anyMatch(r -> r.data() != null),
          "neither delivered nor failed within " + WAIT);
    }
  }

  @Provide
  Arbitrary<Long> addresses() {
    return Arbitraries.oneOf(Arbitraries.just(-1L), Arbitraries.of(0L, -1L, -4096L, Long.MIN_VALUE),
        Arbitraries.longs(), Arbitraries.longs().between(-(1L << 20), -1));
  }

  @Provide
  Arbitrary<Integer> counts() {
    return Arbitraries.oneOf(Arbitraries.integers().between(-2, 9),
        Arbitraries.integers().between(-2, 70_000), Arbitraries.integers(),
        Arbitraries.of(65536, 65537, 1 << 30, (1 << 30) + 1, 1 << 16, Integer.MAX_VALUE));
  }

  /**
   * A ring of any geometry, from a client or from a server: taken exactly when it is within the
   * documented limits (-1 for the address: the peer's own ring's); refused otherwise, naming the
   * peer. Connecting to a hostile server, our client learns the refusal as its connection's
   * failure.
   */
  @Property(tries = 30)
  void ringGeometryIsTakenExactlyWithinTheLimits(@ForAll boolean weAreTheServer,
      @ForAll("addresses") long address, @ForAll("counts") int slots,
      @ForAll("counts") int slotSize) throws Exception {
    Function<HostilePeer, byte[]> ring = p -> new HostileWire.Ring(
        address == -1L ? p.honestRing().address() : address, p.honestRing().rkey(), slots,
        slotSize).encode();
    boolean valid = withinLimits(address, slots, slotSize);
    if (weAreTheServer) {
      HostilePeer peer = fx.connect(p -> ring.apply(p));
      if (valid) {
        assertTrue(peer.established(), "refused: " + peer.refusal());
      } else {
        assertNotNull(peer.refusal(), "accepted " + slots + " x " + slotSize + " at " + address);
        assertFailsNaming(fx.served(peer).in(), peer.localAddress(), "accepting");
      }
      return;
    }
    HostilePeer.Listener listener = fx.listen();
    var client = Source.<ByteString>maybe()
        .viaMat(fx.rdma.outgoingConnectionWithResult(listener.address(), fx.settings, true),
            Keep.both())
        .to(Sink.ignore()).run(fx.system);
    HostilePeer peer = listener.accept(p -> ring.apply(p));
    assertTrue(peer.established(), "our client left the handshake: " + peer.refusal());
    CompletableFuture<?> connected = client.second().first().toCompletableFuture();
    if (valid) {
      StreamsTestKit.await(connected);
      client.first().complete(Optional.empty()); // then the peer goes: a failure
    } else {
      assertFailsNaming(connected, listener.address(), "connecting");
    }
  }

  static boolean withinLimits(long address, int slots, int slotSize) {
    if (address == -1L) address = 1L << 40; // the peer's own ring: somewhere sane
    long bytes = (long) slots * slotSize;
    return slots >= 1 && slots <= 65536 && slotSize >= 1 && slotSize <= (1 << 30)
        && bytes <= Integer.MAX_VALUE && Long.compareUnsigned(address, -bytes) <= 0;
  }

  // ------------------------------------------------------------------ messages

  /** One thing the hostile peer does after an honest handshake. */
  sealed interface Action permits Write, Send, SendPlain, ServerSends, Pause {}

  /** A write of {@code length} bytes at slot {@code slot} plus {@code offset}, key changed by
   * {@code keyDelta}, with {@code imm} (none if null). */
  record Write(int slot, int offset, int length, int keyDelta, Integer imm) implements Action {}

  record Send(int imm) implements Action {}

  record SendPlain(int length) implements Action {}

  /** The server's application sends this many messages to the peer. */
  record ServerSends(int messages) implements Action {}

  record Pause() implements Action {}

  @Provide
  Arbitrary<Integer> immediates() {
    Arbitrary<Integer> credits = Arbitraries.oneOf(Arbitraries.integers().between(0, 4),
        Arbitraries.of(0xFFFFFF, 1000));
    return Arbitraries.oneOf(
        Combinators.combine(Arbitraries.of(HostileWire.END, HostileWire.MORE), credits)
            .as(HostileWire::data),
        Combinators.combine(Arbitraries.integers().between(0, 4), credits)
            .as(HostileWire::control),
        Arbitraries.integers(),
        Arbitraries.of(3 << 30, 0xFFFFFFFF, HostileWire.control(63, 0xFFFFFF)));
  }

  @Provide
  Arbitrary<List<Action>> actions() {
    // mostly inside the ring (a write outside ends the connection before the next message)
    Arbitrary<Action> write = Combinators.combine(
        Arbitraries.frequencyOf(Tuple.of(9, Arbitraries.integers().between(0, SLOTS - 1)),
            Tuple.of(1, Arbitraries.integers().between(-1, SLOTS + 1))),
        Arbitraries.frequencyOf(Tuple.of(9, Arbitraries.just(0)),
            Tuple.of(1, Arbitraries.integers().between(-16, 16))),
        Arbitraries.frequencyOf(Tuple.of(8, Arbitraries.integers().between(0, SLOT_SIZE)),
            Tuple.of(2, Arbitraries.integers().between(0, SLOTS * SLOT_SIZE + 64))),
        Arbitraries.frequencyOf(Tuple.of(18, Arbitraries.just(0)),
            Tuple.of(1, Arbitraries.integers().between(-2, 2)), Tuple.of(1, Arbitraries.integers())),
        Arbitraries.frequencyOf(Tuple.of(9, immediates()),
            Tuple.of(1, Arbitraries.<Integer>just(null))))
        .as(Write::new);
    Arbitrary<Action> send = immediates().map(Send::new);
    Arbitrary<Action> plain = Arbitraries.integers().between(0, 32).map(SendPlain::new);
    Arbitrary<Action> serverSends = Arbitraries.integers().between(1, 3).map(ServerSends::new);
    Arbitrary<Action> pause = Arbitraries.just(new Pause());
    return Arbitraries.frequencyOf(Tuple.of(6, write), Tuple.of(4, send), Tuple.of(1, plain),
        Tuple.of(2, serverSends), Tuple.of(1, pause)).list().ofMinSize(1).ofMaxSize(12);
  }

  /**
   * Any sequence of writes and sends, then one message no rule allows (an unknown kind): by
   * then the server's side has failed naming the peer, or fails on it, within a bounded time
   * (or, once the peer's FIN has reached its application, the peer's going ends it well; what
   * fails after both the application's input and output have ended well is not seen here).
   * What its application took was never more than a slot per write (nor more than
   * max-message-size put together), and every write stayed in the ring it was granted.
   */
  @Property(tries = 40)
  void anySequenceOfMessagesEndsInANamedFailure(@ForAll("actions") List<Action> actions)
      throws Exception {
    HostilePeer peer = fx.connectHonestly();
    HostileFixture.Served served = fx.served(peer);
    HostileWire.Ring r = peer.granted();
    boolean more = false;
    for (Action a : actions) {
      if (a instanceof Write w) {
        more |= w.imm() != null && HostileWire.kind(w.imm()) == HostileWire.MORE;
        peer.write(r.address() + (long) w.slot() * r.slotSize() + w.offset(),
            r.rkey() + w.keyDelta(), new byte[w.length()], w.imm());
      } else if (a instanceof Send s) {
        peer.send(s.imm());
      } else if (a instanceof SendPlain p) {
        peer.sendPlain(p.length());
      } else if (a instanceof ServerSends s) {
        for (int i = 0; i < s.messages(); i++) served.out().offer(ByteString.fromString("m" + i));
      } else {
        peer.pump();
        Thread.sleep(2);
      }
    }
    peer.send(3 << 30);
    // how the connection ended, as its application saw it: its input (which the peer's FIN
    // ends well) and its output (which the peer's CANCEL ends well); a failure shows in
    // whichever was still open. Both ending well means the peer's FIN reached the application
    // and the peer went after it (a write that breaks the QP looks the same as going).
    long deadline = System.nanoTime() + WAIT.toNanos();
    for (CompletionStage<?> side : List.of(served.in(), served.end())) {
      CompletableFuture<?> f = side.toCompletableFuture();
      try {
        f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (ExecutionException e) {
        assertFailsNaming(f, peer.localAddress());
        break;
      } catch (TimeoutException e) {
        throw new AssertionError("the connection did not end within " + WAIT);
      }
    }
    int most = more ? MAX_MESSAGE : SLOT_SIZE;
    for (ByteString b : served.taken()) {
      assertTrue(b.length() <= most, "the application took " + b.length() + " bytes");
    }
  }
}
