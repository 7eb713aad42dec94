package dev.pekkordma.soft;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * Peers that hold the fabric's handshakes as long as they can, many at once: each sends its
 * opening and HELLO a few bytes at a time with pauses, or stops partway and stays silent, or
 * sends a whole HELLO claiming a listener that accepts the call back and never answers; cut off,
 * it connects again. A legitimate peer that connects right behind them, and again right after
 * they connected again, is welcomed within one handshake deadline of connecting, never refused
 * nor cut off: on a plain fabric a handshake holds no thread until WELCOME, so nothing the rogues
 * stall is anything the legitimate peer waits for.
 */
class SlowPeersPropertyTest {
  private static final Duration HANDSHAKE = Duration.ofMillis(1000);
  private static final int MAX_HANDSHAKES = 4;
  /** A legitimate handshake's own time, on a loaded machine. */
  private static final long SLACK_MILLIS = 700;

  private HostileFabric fx;
  private ServerSocket tarPit;
  /** Calls back the tar pit accepted, ever. */
  private final java.util.concurrent.atomic.AtomicInteger tarPitCalls =
      new java.util.concurrent.atomic.AtomicInteger();
  private long longestWait;

  @BeforeProperty
  void setUp() throws IOException {
    fx = new HostileFabric();
    tarPit = new ServerSocket(0, 1000, java.net.InetAddress.getByName("127.0.0.1"));
    Thread t = new Thread(() -> { // accepts the calls back and never answers them
      List<Socket> held = new ArrayList<>();
      try {
        while (true) {
          held.add(tarPit.accept());
          tarPitCalls.incrementAndGet();
        }
      } catch (IOException closed) {
        for (Socket s : held) TricklingRogues.close(s);
      }
    }, "tar-pit");
    t.setDaemon(true);
    t.start();
    SoftFabric.get().tcp().limits(HostileRequestsTest.defaultLimits()
        .withMaxHandshakes(MAX_HANDSHAKES).withHandshake(HANDSHAKE));
  }

  @AfterProperty
  void tearDown() throws IOException {
    System.out.printf("[slow peers] the longest a legitimate peer waited: %d ms (deadline %d ms,"
        + " max-handshakes %d)%n", longestWait, HANDSHAKE.toMillis(), MAX_HANDSHAKES);
    HostileRequestsTest.defaults(SoftFabric.get().tcp());
    tarPit.close();
    fx.close();
  }

  /**
   * How the rogues trickle: how many of them, whether each sends its opening at once (and so
   * takes a handshake thread, or a place in line, at once), bytes per burst, the pause between
   * bursts, after how many bytes of the opening and HELLO they fall silent (all of them: a whole
   * HELLO that names the tar pit), and whether they connect again when cut off.
   */
  record Trickle(int rogues, boolean openAtOnce, int burst, int pauseMillis, int stopAfter,
      boolean reconnect) {}

  @Provide
  Arbitrary<Trickle> trickles() {
    int all = FabricWire.OPENING_BYTES + FabricWire.HANDSHAKE_BYTES;
    return Combinators.combine(Arbitraries.integers().between(MAX_HANDSHAKES + 1,
            4 * MAX_HANDSHAKES), Arbitraries.of(true, true, true, false),
        Arbitraries.integers().between(1, 8), Arbitraries.integers().between(5, 250),
        Arbitraries.oneOf(Arbitraries.integers().between(0, all - 1), Arbitraries.just(all)),
        Arbitraries.of(true, false)).as(Trickle::new);
  }

  @Property(tries = 6)
  void aLegitimatePeerIsWelcomedWithinOneDeadlineWhileRoguesTrickle(
      @ForAll("trickles") Trickle t) throws Exception {
    TricklingRogues rogues = rogues(t);
    rogues.start();
    try {
      rogues.awaitFirstBytes(); // they are in: the legitimate peer comes right behind them
      connectLegitimately(t);
      if (t.reconnect()) rogues.awaitReconnected(3); // right behind them again
      connectLegitimately(t);
      rogues.check();
    } finally {
      rogues.finish();
    }
    fx.otherTrafficGoesOn();
  }

  /**
   * Many more rogues than max-handshakes, each sending a whole HELLO that names the tar pit
   * (which takes the call back and never answers) and connecting again when cut off: their calls
   * back are all open at once, and a legitimate peer that connects meanwhile is welcomed.
   */
  @net.jqwik.api.Example
  void aFloodOfHellosNamingAListenerThatNeverAnswersLocksNoOneOut() throws Exception {
    int all = FabricWire.OPENING_BYTES + FabricWire.HANDSHAKE_BYTES;
    Trickle flood = new Trickle(10 * MAX_HANDSHAKES, true, all, 5, all, true);
    int before = tarPitCalls.get();
    TricklingRogues rogues = rogues(flood);
    long start = System.nanoTime();
    rogues.start();
    try {
      rogues.awaitFirstBytes();
      for (int i = 0; i < 3; i++) connectLegitimately(flood);
      while (tarPitCalls.get() - before < flood.rogues()
          && System.nanoTime() - start < HANDSHAKE.toNanos() / 2) {
        Thread.sleep(5);
      }
      long allOpen = (System.nanoTime() - start) / 1_000_000;
      if (tarPitCalls.get() - before < flood.rogues()) {
        throw new AssertionError("only " + (tarPitCalls.get() - before) + " of " + flood.rogues()
            + " calls back open within half a deadline (max-handshakes " + MAX_HANDSHAKES
            + ")");
      }
      System.out.printf("[slow peers] a flood's %d calls back to a listener that never answers"
          + " all open at once within %d ms (max-handshakes %d)%n", flood.rogues(), allOpen,
          MAX_HANDSHAKES);
      rogues.awaitReconnected(3);
      connectLegitimately(flood);
      rogues.check();
    } finally {
      rogues.finish();
    }
    fx.otherTrafficGoesOn();
  }

  /** Connects as the legitimate peer: welcomed within one deadline, never refused nor cut off. */
  private void connectLegitimately(Trickle t) {
    long start = System.nanoTime();
    try (RawFabricPeer.Conn c = fx.peer.connect()) {
      long waited = (System.nanoTime() - start) / 1_000_000;
      longestWait = Math.max(longestWait, waited);
      net.jqwik.api.statistics.Statistics.collect(waited < 50 ? "at once"
          : waited < HANDSHAKE.toMillis() / 2 ? "within half a deadline"
          : "within a deadline");
      if (waited > HANDSHAKE.toMillis() + SLACK_MILLIS) {
        throw new AssertionError("welcomed after " + waited + " ms: " + t);
      }
    } catch (RawFabricPeer.Refused refused) {
      throw new AssertionError("a legitimate peer was refused (" + refused.getMessage()
          + ") while rogues trickled: " + t);
    } catch (java.io.IOException cut) {
      throw new AssertionError("a legitimate peer was not welcomed (" + cut + ") after "
          + (System.nanoTime() - start) / 1_000_000 + " ms while rogues trickled: " + t);
    }
  }

  /**
   * The rogues: each sends its opening and then a HELLO naming the tar pit, as {@code t} says,
   * on a plain socket.
   */
  private TricklingRogues rogues(Trickle t) {
    FabricAddress pit = new FabricAddress(new byte[] {127, 0, 0, 1}, tarPit.getLocalPort());
    byte[] opening = FabricWire.opening(FabricWire.LINK, null);
    byte[] hello = fx.otherPeer.hello(pit, RawFabricPeer.ours(), false).encode();
    byte[] bytes = java.util.Arrays.copyOf(opening, opening.length + hello.length);
    System.arraycopy(hello, 0, bytes, opening.length, hello.length);
    TricklingRogues.Pattern p = new TricklingRogues.Pattern(t.rogues(),
        t.openAtOnce() ? FabricWire.OPENING_BYTES : t.burst(), t.burst(), t.pauseMillis(),
        t.stopAfter(), t.reconnect());
    return new TricklingRogues(p, bytes, () -> {
      Socket s = new Socket();
      s.connect(RawFabricPeer.ours().socketAddress(), 5000);
      return new Socket[] {s, s};
    }, HANDSHAKE, t);
  }
}
