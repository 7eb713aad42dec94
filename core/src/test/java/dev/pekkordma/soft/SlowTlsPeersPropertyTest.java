package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.testing.TlsStores;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
    welcomedAmong(t, 1);
  }

  /**
   * Ten times max-handshakes strangers that each leave a TLS handshake halfway (a whole
   * ClientHello, then silence) and connect again when cut off: a legitimate peer among them is
   * welcomed, each time.
   */
  @Example
  void moreStalledTlsHandshakesThanMaxHandshakesLockNoOneOut() throws Exception {
    int all = FabricWire.OPENING_BYTES + clientHello.length;
    welcomedAmong(new Trickle(10 * MAX_HANDSHAKES, Kind.STRANGER, all, 5, all, true), 3);
  }

  /**
   * Ten times max-handshakes holders of a trusted certificate that each send a whole HELLO
   * naming a listener that takes the call back and never answers its TLS handshake, and connect
   * again when cut off: a legitimate peer among them is welcomed, each time.
   */
  @Example
  void helloesNamingAListenerThatNeverAnswersTheCallBacksTlsLockNoOneOut() throws Exception {
    int all = FabricWire.HANDSHAKE_BYTES;
    welcomedAmong(new Trickle(10 * MAX_HANDSHAKES, Kind.TRUSTED, all, 5, all, true), 3);
  }

  /**
   * Rogues trickle as {@code t} says; a legitimate peer connects right behind them {@code
   * times} times, and once more right after they connected again (if they do).
   */
  private static void welcomedAmong(Trickle t, int times) throws Exception {
    TricklingRogues rogues = rogues(t);
    rogues.start();
    try {
      rogues.awaitFirstBytes();
      for (int i = 0; i < times; i++) connectLegitimately(t);
      if (t.reconnect()) {
        rogues.awaitReconnected(4);
        connectLegitimately(t);
      }
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
    long before = HostileHandshakeTest.settledHeap();
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
    return (HostileHandshakeTest.settledHeap() - before) / n;
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
   * The rogues: a stranger writes its opening and ClientHello on the socket; a trusted one
   * writes its opening, makes its TLS handshake when it connects, then writes a HELLO naming the
   * tar pit through TLS.
   */
  private static TricklingRogues rogues(Trickle t) {
    byte[] opening = FabricWire.opening(FabricWire.LINK, null);
    byte[] bytes;
    if (t.kind() == Kind.STRANGER) {
      bytes = Arrays.copyOf(opening, opening.length + clientHello.length);
      System.arraycopy(clientHello, 0, bytes, opening.length, clientHello.length);
    } else {
      FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
      hello.from = new FabricAddress(new byte[] {127, 0, 0, 1}, tarPit.getLocalPort());
      hello.to = target.address();
      bytes = hello.encode();
    }
    TricklingRogues.Pattern p = new TricklingRogues.Pattern(t.rogues(), t.burst(), t.burst(),
        t.pauseMillis(), t.stopAfter(), t.reconnect());
    return new TricklingRogues(p, bytes, () -> {
      Socket s = new Socket();
      s.connect(target.address().socketAddress(), 5000);
      if (t.kind() == Kind.STRANGER) return new Socket[] {s, s};
      s.setSoTimeout(5000);
      s.getOutputStream().write(opening);
      try {
        return new Socket[] {s, trustedRogue.client(s, "the fabric under test")};
      } catch (IOException cutMidway) { // its deadline came while the handshake was made
        return new Socket[] {s, null};
      }
    }, HANDSHAKE, t);
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
        for (Socket s : held) TricklingRogues.close(s);
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
}
