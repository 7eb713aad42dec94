package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.zip.CRC32;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.opentest4j.TestAbortedException;

/**
 * What every hostile-peer test stands on: one actor system with a server under attack (small
 * ring: {@link #SLOTS} slots of {@link #SLOT_SIZE} bytes) and an echo server carrying legitimate
 * traffic all along, a provider of the hostile peer's own, and the checks after each attack:
 * the legitimate connection still moves intact data, no thread died, and both providers' live
 * resources are back at their baselines.
 */
final class HostileFixture implements AutoCloseable {
  static final int SLOTS = 4;
  static final int SLOT_SIZE = 256;
  static final int MAX_MESSAGE = 16 * SLOT_SIZE;
  static final Duration WAIT = StreamsTestKit.WAIT;

  /**
   * The server's side of one connection: what reached its application ({@code in}: ends when
   * the peer's data does), its output, and {@code end}: how the connection ended, as its
   * output side sees it (failed with the connection's failure, also after the peer's FIN).
   */
  record Served(CompletionStage<List<ByteString>> in, BoundedSourceQueue<ByteString> out,
      List<ByteString> taken, CompletionStage<Done> end) {}

  final ActorSystem<Void> system;
  final RdmaStreams rdma;
  final RdmaProvider hostile;
  final RdmaStreamSettings settings;
  private final ServerBinding server;
  private final ServerBinding echo;
  private final Map<Integer, CompletableFuture<Served>> served = new ConcurrentHashMap<>();
  private final List<Throwable> uncaught = Collections.synchronizedList(new ArrayList<>());
  private final Thread.UncaughtExceptionHandler previousHandler;
  private final Legit legit;
  private final ResourceCounts baseline;
  private final ResourceCounts hostileBaseline;
  private final List<HostilePeer> peers = new ArrayList<>();
  private final List<HostilePeer.Listener> listeners = new ArrayList<>();
  private volatile CompletableFuture<Done> gate = CompletableFuture.completedFuture(Done.done());

  /** The suite runs its peer on the software provider: skipped where the system is native. */
  static void assumeSoft() {
    if (StreamsTestKit.NATIVE) {
      System.out.println("[streams] skipped: the hostile peer runs on the software provider");
      throw new TestAbortedException("the hostile peer runs on the software provider");
    }
  }

  HostileFixture(String name, String extraConfig) throws Exception {
    previousHandler = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    // fixed rings: the resources counted after each attack must not move with the legit
    // connection's traffic (the peer's RINGs are still taken and checked)
    system = StreamsTestKit.system(name, "pekko-rdma.streams.elastic-ring.enabled = off\n"
        + extraConfig);
    rdma = StreamsTestKit.streams(system);
    hostile = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft\n"
        + "pekko-rdma.cm.connect-timeout = 5s").withFallback(ConfigFactory.load()));
    settings = rdma.settings().withBufferSize(SLOT_SIZE).withReceiveBuffers(SLOTS)
        .withSendBuffers(SLOTS).withInlineThreshold(0).withMaxMessageSize(MAX_MESSAGE);
    server = await(rdma.bind(HOST, 0, settings, false).to(Sink.foreach(c -> {
      // the application takes what the peer sent only while the gate is open; what it took is
      // kept as it took it (a stream that fails leaves no list behind)
      List<ByteString> taken = Collections.synchronizedList(new ArrayList<>());
      Sink<ByteString, CompletionStage<List<ByteString>>> app = Flow.<ByteString>create()
          .map(b -> {
            taken.add(b);
            return b;
          })
          .mapAsync(1, b -> gate.thenApply(d -> b)).toMat(Sink.seq(), Keep.right());
      Source<ByteString, Pair<BoundedSourceQueue<ByteString>, CompletionStage<Done>>> output =
          Source.<ByteString>queue(64).watchTermination(Keep.both());
      Pair<CompletionStage<List<ByteString>>,
          Pair<BoundedSourceQueue<ByteString>, CompletionStage<Done>>> m =
          c.handleWith(Flow.fromSinkAndSourceMat(app, output, Keep.both()), system);
      servedAt(c.remoteAddress().getPort()).complete(new Served(m.first(), m.second().first(),
          taken, m.second().second()));
    })).run(system));
    echo = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
    legit = new Legit(new InetSocketAddress(HOST, echo.localAddress().getPort()));
    legit.awaitMore(20);
    baseline = rdma.liveResources();
    hostileBaseline = hostile.liveResources();
  }

  private CompletableFuture<Served> servedAt(int port) {
    return served.computeIfAbsent(port, p -> new CompletableFuture<>());
  }

  /**
   * The server's application stops taking what its peers send (it holds one element): its
   * stream stays open, and no slot it has not taken is credited.
   */
  void holdServer() {
    gate = new CompletableFuture<>();
  }

  void releaseServer() {
    gate.complete(Done.done());
  }

  /** The server under attack. */
  InetSocketAddress server() {
    return new InetSocketAddress(HOST, server.localAddress().getPort());
  }

  /** The server's side of the connection from {@code peer}, once its application has it. */
  Served served(HostilePeer peer) throws Exception {
    return served(peer.port());
  }

  /** The server's side of the connection from {@code port} (one of our own clients'). */
  Served served(int port) throws Exception {
    return servedAt(port).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** A hostile peer connected to the server under attack with {@code privateData}. */
  HostilePeer connect(Function<HostilePeer, byte[]> privateData) {
    return connect(server(), privateData);
  }

  /** A hostile peer connected to another server of the system (a bulk source, say). */
  HostilePeer connect(InetSocketAddress to,
      Function<HostilePeer, byte[]> privateData) {
    return track(HostilePeer.connect(hostile, to, privateData));
  }

  /** An honest handshake: the attack comes after. */
  HostilePeer connectHonestly() {
    HostilePeer peer = connect(HostilePeer::honestPrivateData);
    assertTrue(peer.established(), "refused: " + peer.refusal());
    return peer;
  }

  /** A hostile server for our clients: its accepted peers are closed after the attack too. */
  HostilePeer.Listener listen() {
    HostilePeer.Listener l = new HostilePeer.Listener(hostile, this::track);
    listeners.add(l);
    return l;
  }

  private HostilePeer track(HostilePeer peer) {
    peers.add(peer);
    return peer;
  }

  /**
   * {@code stage} fails within {@link #WAIT} with an RdmaStreamException naming {@code peer}'s
   * address, whose reason contains each of {@code words}; returns it.
   */
  static RdmaStreamException assertFailsNaming(CompletionStage<?> stage, InetSocketAddress peer,
      String... words) throws InterruptedException {
    long t0 = System.nanoTime();
    Throwable cause;
    try {
      Object v = stage.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      throw new AssertionError("the stream under attack completed with " + v);
    } catch (ExecutionException e) {
      cause = e.getCause();
    } catch (TimeoutException e) {
      throw new AssertionError("the stream under attack did not fail within " + WAIT);
    }
    RdmaStreamException ex = assertInstanceOf(RdmaStreamException.class, cause,
        () -> "failed with " + cause);
    assertEquals(peer.getPort(), ex.peer().getPort(), ex.getMessage());
    assertTrue(ex.getMessage().contains(HOST + ":" + peer.getPort()), ex.getMessage());
    for (String w : words) {
      assertTrue(ex.reason().contains(w), "'" + w + "' not in: " + ex.reason());
    }
    assertTrue(System.nanoTime() - t0 < WAIT.toNanos());
    return ex;
  }

  /**
   * After each attack (the tests' @AfterEach / @AfterTry): every write of the attack's peers
   * stayed in its ring, they are closed, no thread died, the legitimate connection still moves
   * intact data, and both providers' resources are back.
   */
  void afterAttack() throws InterruptedException {
    releaseServer();
    List<String> escaped = new ArrayList<>();
    for (HostilePeer p : peers) {
      p.close();
      escaped.addAll(p.escapes());
    }
    peers.clear();
    for (HostilePeer.Listener l : listeners) l.close();
    listeners.clear();
    if (!escaped.isEmpty()) fail(String.join("; ", escaped));
    legit.awaitMore(10);
    StreamsTestKit.awaitResources(rdma, baseline);
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!hostile.liveResources().equals(hostileBaseline) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertEquals(hostileBaseline, hostile.liveResources(), "the hostile peer's resources");
    if (!uncaught.isEmpty()) fail("a thread died: " + uncaught, uncaught.get(0));
    assertTrue(!system.whenTerminated().isCompleted(), "the actor system is up");
    served.clear(); // every connection is over, and ports are reused: a later peer's may be one
  }

  @Override
  public void close() throws Exception {
    try {
      legit.stop();
      await(server.unbind());
      await(echo.unbind());
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(WAIT.toSeconds(), TimeUnit.SECONDS);
      hostile.close();
      Thread.setDefaultUncaughtExceptionHandler(previousHandler);
    }
  }

  /**
   * A legitimate connection of the same system, to the echo server, all along: numbered
   * messages whose content follows from their number, each checked when it comes back.
   */
  private final class Legit {
    private final AtomicLong checked = new AtomicLong();
    private final AtomicReference<String> corrupt = new AtomicReference<>();
    private final UniqueKillSwitch kill;
    private final CompletionStage<Done> done;

    Legit(InetSocketAddress echo) {
      Pair<UniqueKillSwitch, CompletionStage<Done>> run = Source.range(0, Integer.MAX_VALUE)
          .map(Legit::message)
          .throttle(400, Duration.ofSeconds(1))
          .viaMat(KillSwitches.single(), Keep.right())
          .via(rdma.outgoingConnection(echo, rdma.settings(), false))
          .toMat(Sink.foreach(this::check), Keep.both()).run(system);
      kill = run.first();
      done = run.second();
    }

    static ByteString message(int n) {
      byte[] b = new byte[300 + n % 700];
      new Random(n).nextBytes(b);
      CRC32 crc = new CRC32();
      crc.update(b, 8, b.length - 8);
      ByteBuffer.wrap(b).putInt(0, n).putInt(4, (int) crc.getValue());
      return ByteString.fromArrayUnsafe(b);
    }

    private void check(ByteString got) {
      long expected = checked.get();
      ByteBuffer b = got.asByteBuffer();
      if (b.remaining() < 8 || b.getInt(0) != expected || !got.equals(message((int) expected))) {
        corrupt.compareAndSet(null, "message " + expected + " came back as " + got.length()
            + " bytes numbered " + (b.remaining() >= 4 ? b.getInt(0) : -1));
      }
      checked.incrementAndGet();
    }

    /** {@code n} more messages come back intact, and the connection is still up. */
    void awaitMore(int n) throws InterruptedException {
      long target = checked.get() + n;
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (checked.get() < target && System.nanoTime() < deadline && !done.toCompletableFuture()
          .isDone()) {
        Thread.sleep(5);
      }
      if (corrupt.get() != null) fail("the legitimate connection's data: " + corrupt.get());
      if (done.toCompletableFuture().isDone()) {
        fail("the legitimate connection ended: " + done.toCompletableFuture().handle(
            (d, e) -> e == null ? "completed" : e.toString()).join());
      }
      assertTrue(checked.get() >= target, "the legitimate connection stalled at "
          + checked.get());
    }

    void stop() throws Exception {
      kill.shutdown();
      await(done);
    }
  }
}
