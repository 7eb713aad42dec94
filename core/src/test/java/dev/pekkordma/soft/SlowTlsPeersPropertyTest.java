package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.testing.TlsStores;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * {@link SlowPeersPropertyTest}'s peers against a fabric under mutual TLS: strangers that send
 * a TLS ClientHello a few bytes at a time with pauses, or stop partway through it, or send it
 * whole and leave the handshake halfway; holders of a trusted certificate that finish TLS and
 * then trickle their HELLO, or send a whole one naming a listener that never answers the call
 * back's TLS handshake. Cut off, they connect again. A legitimate peer that connects right behind
 * them, and again right after they connected again, is welcomed within one handshake deadline of
 * connecting, never refused nor cut off: the gate makes TLS handshakes without a thread, so
 * nothing the rogues stall is anything the legitimate peer waits for.
 *
 * <p>The fabric under test is one of this class's own (the JVM's is plain), on a switch with no
 * devices: the handshake is all that is asked of it.
 */
class SlowTlsPeersPropertyTest {
  private static final Duration HANDSHAKE = Duration.ofMillis(1000);
  private static final int MAX_HANDSHAKES = 4;
  /** A legitimate handshake's own time (two TLS handshakes), on a loaded machine. */
  private static final long SLACK_MILLIS = 700;

  private static TcpFabric target;
  private static TlsFabricPeer legitimate;
  private static SoftTls trustedRogue;
  private static ServerSocket tarPit;
  private static byte[] clientHello;
  private static long longestWait;

  @BeforeContainer
  static void setUp() throws Exception {
    TlsStores stores = TlsStores.get();
    target = TcpFabric.start(RdmaSettings.from(ConfigFactory.parseString(
        stores.config(TlsStores.ALICE))), new SoftFabric());
    target.limits(HostileRequestsTest.defaultLimits().withMaxHandshakes(MAX_HANDSHAKES)
        .withHandshake(HANDSHAKE));
    legitimate = new TlsFabricPeer(tls(stores, TlsStores.BOB));
    trustedRogue = tls(stores, TlsStores.CAROL);
    tarPit = tarPit();
    clientHello = clientHello();
    legitimate.connect(target.address()).close(); // the first TLS of this JVM: classes load
  }

  @AfterContainer
  static void tearDown() throws IOException {
    System.out.printf("[slow TLS peers] the longest a legitimate peer waited: %d ms (deadline %d"
        + " ms, max-handshakes %d)%n", longestWait, HANDSHAKE.toMillis(), MAX_HANDSHAKES);
    if (target != null) target.stop();
    if (legitimate != null) legitimate.close();
    if (tarPit != null) tarPit.close();
  }

  /** Who the rogues are: strangers in the TLS handshake, or trusted ones past it. */
  enum Kind { STRANGER, TRUSTED }

  /**
   * How the rogues trickle: how many, of which kind, bytes per burst, the pause between bursts,
   * after how many bytes they fall silent (a stranger's of its opening and ClientHello: all of
   * them leaves the TLS handshake halfway; a trusted one's of its HELLO: all of it names the tar
   * pit), and whether they connect again when cut off.
   */
  record Trickle(int rogues, Kind kind, int burst, int pauseMillis, int stopAfter,
      boolean reconnect) {}

  @Provide
  Arbitrary<Trickle> trickles() {
    Arbitrary<Integer> rogues = Arbitraries.integers().between(MAX_HANDSHAKES + 1,
        4 * MAX_HANDSHAKES);
    Arbitrary<Integer> bursts = Arbitraries.oneOf(Arbitraries.just(1),
        Arbitraries.integers().between(1, 64));
    Arbitrary<Integer> pauses = Arbitraries.integers().between(5, 250);
    Arbitrary<Boolean> reconnect = Arbitraries.of(true, false);
    int strangers = FabricWire.OPENING_BYTES + clientHello.length;
    Arbitrary<Trickle> stranger = Combinators.combine(rogues, bursts, pauses,
        Arbitraries.oneOf(Arbitraries.integers().between(0, strangers - 1),
            Arbitraries.just(strangers)), reconnect)
        .as((n, b, p, stop, again) -> new Trickle(n, Kind.STRANGER, b, p, stop, again));
    Arbitrary<Trickle> trusted = Combinators.combine(rogues, bursts, pauses,
        Arbitraries.oneOf(Arbitraries.integers().between(0, FabricWire.HANDSHAKE_BYTES - 1),
            Arbitraries.just(FabricWire.HANDSHAKE_BYTES)), reconnect)
        .as((n, b, p, stop, again) -> new Trickle(n, Kind.TRUSTED, b, p, stop, again));
    return Arbitraries.oneOf(stranger, trusted);
  }

  @Property(tries = 8)
  void aLegitimatePeerIsWelcomedWithinOneDeadlineWhileRoguesTrickle(
      @ForAll("trickles") Trickle t) throws Exception {
    Rogues rogues = new Rogues(t);
    rogues.start();
    try {
      rogues.awaitFirstBytes();
      connectLegitimately(t);
      if (t.reconnect()) rogues.awaitReconnected();
      connectLegitimately(t);
      rogues.check();
    } finally {
      rogues.finish();
    }
  }

  /**
   * Ten times max-handshakes strangers that each leave a TLS handshake halfway (a whole
   * ClientHello, then silence) and connect again when cut off: a legitimate peer among them is
   * welcomed, each time.
   */
  @Example
  void moreStalledTlsHandshakesThanMaxHandshakesLockNoOneOut() throws Exception {
    int all = FabricWire.OPENING_BYTES + clientHello.length;
    Trickle stalled = new Trickle(10 * MAX_HANDSHAKES, Kind.STRANGER, all, 5, all, true);
    Rogues rogues = new Rogues(stalled);
    rogues.start();
    try {
      rogues.awaitFirstBytes();
      for (int i = 0; i < 3; i++) connectLegitimately(stalled);
      rogues.awaitReconnected();
      connectLegitimately(stalled);
      rogues.check();
    } finally {
      rogues.finish();
    }
  }

  /**
   * Ten times max-handshakes holders of a trusted certificate that each send a whole HELLO
   * naming a listener that takes the call back and never answers its TLS handshake, and connect
   * again when cut off: a legitimate peer among them is welcomed, each time.
   */
  @Example
  void helloesNamingAListenerThatNeverAnswersTheCallBacksTlsLockNoOneOut() throws Exception {
    int all = FabricWire.HANDSHAKE_BYTES;
    Trickle flood = new Trickle(10 * MAX_HANDSHAKES, Kind.TRUSTED, all, 5, all, true);
    Rogues rogues = new Rogues(flood);
    rogues.start();
    try {
      rogues.awaitFirstBytes();
      for (int i = 0; i < 3; i++) connectLegitimately(flood);
      rogues.awaitReconnected();
      connectLegitimately(flood);
      rogues.check();
    } finally {
      rogues.finish();
    }
  }

  /**
   * What a TLS connection that has proven nothing costs the fabric's heap: one that sent only
   * its opening (its engine is made), and one that sent a whole ClientHello, so that the engine
   * answered and waits for the rest (its handshake state and buffers made).
   */
  @Example
  void anUnprovenTlsConnectionCostsTheHeapLittle() throws Exception {
    target.limits(HostileRequestsTest.defaultLimits().withHandshake(Duration.ofSeconds(30)));
    int n = 200;
    List<Socket> sockets = new ArrayList<>();
    try {
      long opened = heapPerConnection(sockets, n, new byte[0]);
      long halfway = heapPerConnection(sockets, n, clientHello);
      System.out.printf("[heap] per TLS connection that has proven nothing: %d bytes with its"
          + " opening only, %d bytes in a TLS handshake left halfway (%d connections each)%n",
          opened, halfway, n);
      assertTrue(opened < 8 * 1024, opened + " bytes a connection with its opening");
      assertTrue(halfway < 64 * 1024, halfway + " bytes a connection halfway through TLS");
    } finally {
      for (Socket s : sockets) s.close();
      target.limits(HostileRequestsTest.defaultLimits().withMaxHandshakes(MAX_HANDSHAKES)
          .withHandshake(HANDSHAKE));
    }
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (target.gate().waiting() > 0) { // hung up: their places are free at once
      assertTrue(System.nanoTime() < deadline, "still waiting: " + target.gate().waiting());
      Thread.sleep(10);
    }
  }

  /**
   * What each of {@code n} more connections costs the heap once it sent its opening and then
   * {@code then}, and the gate has done what it can with them.
   */
  private static long heapPerConnection(List<Socket> sockets, int n, byte[] then)
      throws Exception {
    long before = settledHeap();
    int waiting = target.gate().waiting();
    for (int i = 0; i < n; i++) {
      Socket s = new Socket();
      s.connect(target.address().socketAddress(), 5000);
      OutputStream out = s.getOutputStream();
      out.write(FabricWire.opening(FabricWire.LINK, null));
      out.write(then);
      sockets.add(s);
    }
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (target.gate().waiting() < waiting + n) {
      assertTrue(System.nanoTime() < deadline, "all accepted: " + target.gate().waiting());
      Thread.sleep(10);
    }
    Thread.sleep(1000); // the engines have answered the ClientHellos
    return (settledHeap() - before) / n;
  }

  /** Connects as the legitimate peer: welcomed within one deadline, never refused nor cut off. */
  private static void connectLegitimately(Trickle t) {
    long start = System.nanoTime();
    try (Socket welcomed = legitimate.connect(target.address())) {
      long waited = (System.nanoTime() - start) / 1_000_000;
      longestWait = Math.max(longestWait, waited);
      net.jqwik.api.statistics.Statistics.collect(waited < 100 ? "within 100 ms"
          : waited < HANDSHAKE.toMillis() / 2 ? "within half a deadline" : "within a deadline");
      if (waited > HANDSHAKE.toMillis() + SLACK_MILLIS) {
        throw new AssertionError("welcomed after " + waited + " ms: " + t);
      }
    } catch (RawFabricPeer.Refused refused) {
      throw new AssertionError("a legitimate peer was refused (" + refused.getMessage()
          + ") while rogues trickled: " + t);
    } catch (IOException cut) {
      throw new AssertionError("a legitimate peer was not welcomed (" + cut + ") after "
          + (System.nanoTime() - start) / 1_000_000 + " ms while rogues trickled: " + t);
    }
  }

  /**
   * The rogues, worked by one thread: each writes its next burst when its pause is over. A
   * stranger writes its opening and ClientHello on the socket; a trusted one writes its opening,
   * makes its TLS handshake when it connects, then writes its HELLO through TLS.
   */
  private static final class Rogues extends Thread {
    private final Trickle t;
    private final byte[] bytes;
    private final Socket[] plain;
    /** Where each writes: the socket, or TLS over it. */
    private final Socket[] talk;
    private final int[] sent;
    private final long[] next;
    private volatile boolean stopping;
    private volatile Throwable failure;
    private final CountDownLatch firstBytes = new CountDownLatch(1);
    private final AtomicInteger reconnected = new AtomicInteger();

    Rogues(Trickle t) {
      super("tls-rogues");
      setDaemon(true);
      this.t = t;
      if (t.kind() == Kind.STRANGER) {
        byte[] opening = FabricWire.opening(FabricWire.LINK, null);
        bytes = Arrays.copyOf(opening, opening.length + clientHello.length);
        System.arraycopy(clientHello, 0, bytes, opening.length, clientHello.length);
      } else {
        FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
        hello.from = new FabricAddress(new byte[] {127, 0, 0, 1}, tarPit.getLocalPort());
        hello.to = target.address();
        bytes = hello.encode();
      }
      plain = new Socket[t.rogues()];
      talk = new Socket[t.rogues()];
      sent = new int[t.rogues()];
      next = new long[t.rogues()];
    }

    @Override
    public void run() {
      try {
        for (int i = 0; i < plain.length; i++) open(i);
        while (!stopping) {
          long now = System.nanoTime();
          for (int i = 0; i < plain.length; i++) {
            if (talk[i] == null || now < next[i]) continue;
            int n = Math.min(t.burst(), Math.min(bytes.length, t.stopAfter()) - sent[i]);
            try {
              if (n > 0) {
                talk[i].getOutputStream().write(bytes, sent[i], n);
                talk[i].getOutputStream().flush();
                sent[i] += n;
              } else if (closed(talk[i])) { // silent now: cut off yet?
                throw new IOException("closed");
              }
            } catch (IOException cut) {
              close(plain[i]);
              talk[i] = null;
              if (t.reconnect() && !stopping) {
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
        for (Socket s : plain) if (s != null) close(s);
      }
    }

    private void open(int i) throws IOException {
      Socket s = new Socket();
      s.connect(target.address().socketAddress(), 5000);
      plain[i] = s;
      talk[i] = s;
      sent[i] = 0;
      next[i] = System.nanoTime();
      if (t.kind() == Kind.TRUSTED) {
        s.setSoTimeout(5000);
        s.getOutputStream().write(FabricWire.opening(FabricWire.LINK, null));
        try {
          talk[i] = trustedRogue.client(s, "the fabric under test");
        } catch (IOException cutMidway) { // its deadline came while the handshake was made
          talk[i] = null;
        }
      }
    }

    /** Whether our side closed {@code s}: what it sent is read, the end seen without waiting. */
    private static boolean closed(Socket s) {
      try {
        s.setSoTimeout(1);
        InputStream in = s.getInputStream();
        byte[] b = new byte[4096];
        while (true) {
          if (in.read(b) < 0) return true;
        }
      } catch (java.net.SocketTimeoutException open) {
        return false;
      } catch (IOException reset) {
        return true;
      }
    }

    void awaitFirstBytes() throws InterruptedException {
      if (!firstBytes.await(10, TimeUnit.SECONDS)) check();
    }

    /** Until every rogue was cut off and connected again (a deadline and a bit, at most). */
    void awaitReconnected() throws InterruptedException {
      long until = System.nanoTime() + 4 * HANDSHAKE.toNanos();
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
      join(10_000);
      check();
    }
  }

  private static SoftTls tls(TlsStores stores, String identity) {
    return SoftTls.from(RdmaSettings.from(ConfigFactory.parseString(stores.config(identity))));
  }

  /** A listener that takes the calls back and never answers them. */
  private static ServerSocket tarPit() throws IOException {
    ServerSocket pit = new ServerSocket(0, 1000, InetAddress.getByName("127.0.0.1"));
    Thread t = new Thread(() -> {
      List<Socket> held = new ArrayList<>();
      try {
        while (true) held.add(pit.accept());
      } catch (IOException closed) {
        for (Socket s : held) close(s);
      }
    }, "tls-tar-pit");
    t.setDaemon(true);
    t.start();
    return pit;
  }

  /** A TLS client's first flight, as any JDK client sends it. */
  private static byte[] clientHello() throws Exception {
    SSLEngine engine = SSLContext.getDefault().createSSLEngine("127.0.0.1", 1);
    engine.setUseClientMode(true);
    ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
    engine.wrap(ByteBuffer.allocate(0), out);
    return Arrays.copyOf(out.array(), out.position());
  }

  private static long settledHeap() throws InterruptedException {
    Runtime r = Runtime.getRuntime();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 3; i++) { // the least of three collections: what is live
      System.gc();
      Thread.sleep(50);
      used = Math.min(used, r.totalMemory() - r.freeMemory());
    }
    return used;
  }

  private static void close(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // gone
    }
  }
}
