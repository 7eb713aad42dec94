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
        for (Socket s : held) close(s);
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
        + " %d handshake threads)%n", longestWait, HANDSHAKE.toMillis(), MAX_HANDSHAKES);
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
    Rogues rogues = new Rogues(t);
    rogues.start();
    try {
      rogues.awaitFirstBytes(); // they are in: the legitimate peer comes right behind them
      connectLegitimately(t);
      if (t.reconnect()) rogues.awaitReconnected(); // right behind them again
      connectLegitimately(t);
      rogues.check();
    } finally {
      rogues.finish();
    }
    fx.otherTrafficGoesOn();
  }

  /**
   * Many more rogues than handshake threads, each sending a whole HELLO that names the tar pit
   * (which takes the call back and never answers) and connecting again when cut off: their calls
   * back are all open at once, and a legitimate peer that connects meanwhile is welcomed.
   */
  @net.jqwik.api.Example
  void aFloodOfHellosNamingAListenerThatNeverAnswersLocksNoOneOut() throws Exception {
    int all = FabricWire.OPENING_BYTES + FabricWire.HANDSHAKE_BYTES;
    Trickle flood = new Trickle(10 * MAX_HANDSHAKES, true, all, 5, all, true);
    int before = tarPitCalls.get();
    Rogues rogues = new Rogues(flood);
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
            + " calls back open within half a deadline (" + MAX_HANDSHAKES
            + " handshake threads)");
      }
      System.out.printf("[slow peers] a flood's %d calls back to a listener that never answers"
          + " all open at once within %d ms (%d handshake threads)%n", flood.rogues(), allOpen,
          MAX_HANDSHAKES);
      rogues.awaitReconnected();
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

  /** The rogues, worked by one thread: each writes its next burst when its pause is over. */
  private final class Rogues extends Thread {
    private final Trickle t;
    private final byte[] bytes;
    private final Socket[] sockets;
    private final int[] sent;
    private final long[] next;
    private volatile boolean stopping;
    private volatile Throwable failure;
    private final java.util.concurrent.CountDownLatch firstBytes =
        new java.util.concurrent.CountDownLatch(1);
    /** Rogues cut off and connected again, ever. */
    private final java.util.concurrent.atomic.AtomicInteger reconnected =
        new java.util.concurrent.atomic.AtomicInteger();

    Rogues(Trickle t) {
      super("rogues");
      setDaemon(true);
      this.t = t;
      FabricAddress pit = new FabricAddress(new byte[] {127, 0, 0, 1}, tarPit.getLocalPort());
      byte[] opening = FabricWire.opening(FabricWire.LINK, null);
      byte[] hello = fx.otherPeer.hello(pit, RawFabricPeer.ours(), false).encode();
      bytes = java.util.Arrays.copyOf(opening, opening.length + hello.length);
      System.arraycopy(hello, 0, bytes, opening.length, hello.length);
      sockets = new Socket[t.rogues()];
      sent = new int[t.rogues()];
      next = new long[t.rogues()];
    }

    @Override
    public void run() {
      try {
        for (int i = 0; i < sockets.length; i++) open(i);
        while (!stopping) {
          long now = System.nanoTime();
          for (int i = 0; i < sockets.length; i++) {
            if (sockets[i] == null || now < next[i]) continue;
            int burst = t.openAtOnce() && sent[i] == 0 ? FabricWire.OPENING_BYTES : t.burst();
            int n = Math.min(burst, Math.min(bytes.length, t.stopAfter()) - sent[i]);
            try {
              if (n > 0) {
                sockets[i].getOutputStream().write(bytes, sent[i], n);
                sent[i] += n;
              } else if (closed(sockets[i])) { // silent now: cut off yet?
                throw new IOException("closed");
              }
            } catch (IOException cut) {
              close(sockets[i]);
              sockets[i] = null;
              if (t.reconnect()) {
                open(i);
                reconnected.incrementAndGet();
              }
              continue;
            }
            next[i] = now + t.pauseMillis() * 1_000_000L;
          }
          firstBytes.countDown();
          Thread.sleep(2);
        }
      } catch (Throwable e) {
        failure = e;
      } finally {
        for (Socket s : sockets) if (s != null) close(s);
      }
    }

    private void open(int i) throws IOException {
      Socket s = new Socket();
      s.connect(RawFabricPeer.ours().socketAddress(), 5000);
      sockets[i] = s;
      sent[i] = 0;
      next[i] = System.nanoTime();
    }

    /** Whether our side closed {@code s} (read returns the end without blocking). */
    private boolean closed(Socket s) throws IOException {
      s.setSoTimeout(1);
      try {
        return s.getInputStream().read() < 0;
      } catch (java.net.SocketTimeoutException open) {
        return false;
      }
    }

    /** Until each rogue sent its first bytes (or chose to send none). */
    void awaitFirstBytes() throws InterruptedException {
      if (!firstBytes.await(5, java.util.concurrent.TimeUnit.SECONDS)) check();
    }

    /** Until every rogue was cut off and connected again (a deadline and a bit, at most). */
    void awaitReconnected() throws InterruptedException {
      long until = System.nanoTime() + 3 * HANDSHAKE.toNanos();
      int from = reconnected.get();
      while (reconnected.get() - from < t.rogues() && System.nanoTime() < until) {
        check();
        Thread.sleep(1);
      }
      if (reconnected.get() - from < t.rogues()) {
        throw new AssertionError("the rogues were not all cut off within their deadline: " + t);
      }
    }

    void check() {
      if (failure != null) throw new AssertionError("the rogues failed", failure);
    }

    void finish() throws InterruptedException {
      stopping = true;
      join(5000);
      check();
    }
  }

  private static void close(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // gone
    }
  }
}
