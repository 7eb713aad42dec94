package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.conformance.PeerProcess;
import dev.pekkordma.conformance.VethLink;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Stream connections across a link that fails: the Soft-RoCE VM's veth pair between rxe_a and
 * rxe_b, with {@code tc netem} and link flaps put on it by {@code native/softroce/link.sh} (its
 * path in {@code pekko-rdma.test.link-script}; the server binds {@code
 * pekko-rdma.test.cm-address}, 198.51.100.1, and clients reach it from the other end). RC
 * retransmits what the link loses (an outage of 1.5 s too), so every transfer ends with the
 * checksum it started with;
 * a link that stays dead fails the stream naming the peer once the QP's retries are spent; a
 * killed peer fails only its own connection. Figures are printed with the {@code [faults]}
 * prefix, throughput as a share of the clean link's in the same run.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.test.link-script", matches = ".+")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(600)
class LossyLinkTest {
  /** The warm-up's bytes; the measured transfers move a share of it. */
  private static final long CLEAN_BYTES = Long.getLong("pekko-rdma.test.lossy-bytes", 8L << 20);
  private static final Duration TRANSFER_WAIT = Duration.ofSeconds(240);
  /**
   * A child sender's JVM: after the link came back, a CM request or two may still be lost while
   * the neighbour entries recover, and each costs the CM's response timeout (about 4 s).
   */
  private static final List<String> PATIENT_JVM = Stream.concat(PeerProcess.TEST_JVM.stream(),
      Stream.of("-Dpekko-rdma.streams.connect-timeout=60s")).toList();
  static ActorSystem<Void> system;
  static RdmaStreams rdma;
  static ServerBinding server;
  static final BlockingQueue<Arrival> arrivals = new LinkedBlockingQueue<>();
  static double cleanMbPerS;
  static String kernelResourcesAtStart;

  /** One connection the server took: who, and what its application received. */
  record Arrival(InetSocketAddress peer, CompletionStage<Received> received, AtomicLong taken) {}

  record Received(long bytes, long crc) {}

  @BeforeAll
  static void start() throws Exception {
    VethLink.set("clear");
    // the first connection also resolves the peer's address and opens the device: slow when
    // emulated
    system = StreamsTestKit.system("LossyLinkTest", "pekko-rdma.streams.connect-timeout = 60s");
    rdma = StreamsTestKit.streams(system);
    server = await(rdma.bind(HOST, 0).to(Sink.foreach(c -> {
      AtomicLong taken = new AtomicLong();
      Sink<ByteString, CompletionStage<Received>> checksum =
          Sink.fold(Pair.create(0L, new CRC32C()), (Pair<Long, CRC32C> acc, ByteString b) -> {
            taken.addAndGet(b.size());
            acc.second().update(b.asByteBuffer());
            return Pair.create(acc.first() + b.size(), acc.second());
          }).mapMaterializedValue(f -> f.thenApply(
              acc -> new Received(acc.first(), acc.second().getValue())));
      // the server only listens; its side closes when the client's data has ended
      arrivals.add(new Arrival(c.remoteAddress(), c.handleWith(
          Flow.fromSinkAndSourceCoupledMat(checksum, Source.<ByteString>maybe(), Keep.left()),
          system), taken));
    })).run(system));
    log("server at " + server.localAddress() + "; link: " + System.getProperty(VethLink.SCRIPT_PROPERTY));
  }

  @AfterAll
  static void stop() throws Exception {
    VethLink.set("clear");
    if (server != null) await(server.unbind());
    system.terminate();
  }

  @Test
  @Order(1)
  void aCleanLinkSetsTheBaseline() throws Exception {
    // the JIT (C1 only in the VM) and the device's first connection: not the link's figures
    transfer("warm-up (not compared)", CLEAN_BYTES);
    cleanMbPerS = transfer("clean", CLEAN_BYTES / 4);
    // what the kernel holds for this process between connections (its device contexts)
    kernelResourcesAtStart = kernelResources();
  }

  /** Bytes moved: CLEAN_BYTES / shareOfClean; the slow faults move a quarter of the others. */
  @ParameterizedTest(name = "{0}")
  @Order(2)
  @CsvSource(delimiter = '|', value = {
      "netem loss 1%                   | 4",
      "netem loss 5%                   | 16",
      "in-order delay 5ms 2ms          | 4",
      "netem delay 1ms reorder 25% 50% | 16",
      "netem duplicate 2%              | 4"})
  void everyTransferCompletesIntactOnAFaultyLink(String fault, int shareOfClean)
      throws Exception {
    VethLink.set(fault.split(" "));
    String netem = fault.substring(fault.indexOf(' ') + 1);
    try {
      double mbPerS = transfer(netem, CLEAN_BYTES / shareOfClean);
      log(String.format("%s: %.1f%% of the clean link's throughput", netem,
          100 * mbPerS / cleanMbPerS));
    } finally {
      log("link counters: " + String.join(" / ", VethLink.set("show").lines()
          .filter(l -> l.contains("Sent")).map(String::trim).toList()));
      VethLink.set("clear");
    }
  }

  @Test
  @Order(3)
  void anOutageWithinTheRetryTimeLosesNothing() throws Exception {
    ResourceCounts start = settledResources();
    Pair<CompletionStage<Void>, Arrival> run = startSending(CLEAN_BYTES / 4, true);
    awaitTaken(run.second(), 64 * 1024);
    // every packet lost, the carrier kept: taking veth_a down instead removes its routes, rxe
    // may then fail a send at once (LOC_QP_OP_ERR) rather than lose it, and in a CI run the
    // kernel CM across the pair answered nothing after that for the rest of the VM's run
    VethLink.set("blackhole");
    Thread.sleep(1500);
    VethLink.set("clear");
    log("link dead for 1.5 s");
    await(run.first(), TRANSFER_WAIT);
    assertEquals(new Received(CLEAN_BYTES / 4, crcOfPattern(CLEAN_BYTES / 4)),
        await(run.second().received(), TRANSFER_WAIT));
    awaitResources(rdma, start);
  }

  @Test
  @Order(4)
  void aLinkThatStaysDeadFailsBothEndsNamingThePeer() throws Exception {
    ResourceCounts start = settledResources();
    Pair<CompletionStage<Void>, Arrival> run = startSending(-1, true);
    awaitTaken(run.second(), 64 * 1024);
    VethLink.set("blackhole");
    long dead = System.nanoTime();
    try {
      RdmaStreamException client = failure(run.first(), Duration.ofSeconds(120));
      long took = (System.nanoTime() - dead) / 1_000_000;
      log("client failed " + took + " ms after the link died: " + client.getMessage());
      assertTrue(client.getMessage().contains(HOST + ":" + server.localAddress().getPort()),
          client.getMessage());
      assertTrue(client.getMessage().contains("RETRY_EXC_ERR"), client.getMessage());
      RdmaStreamException serverSide = failure(run.second().received(), Duration.ofSeconds(120));
      log("server failed: " + serverSide.getMessage());
      assertTrue(serverSide.getMessage().contains(run.second().peer().toString()
          .replaceFirst("^[^/]*/", "")), serverSide.getMessage());
    } finally {
      VethLink.set("clear");
    }
    awaitResources(rdma, start);
    awaitKernelResources(kernelResourcesAtStart);
  }

  @Test
  @Order(5)
  void aPeerKilledMidTransferFailsItsConnectionAndTheServerTakesTheNext() throws Exception {
    ResourceCounts start = settledResources();
    int port = server.localAddress().getPort();
    try (PeerProcess sender = PeerProcess.start(PATIENT_JVM, StreamSendMain.class, HOST,
        "" + port, "-1")) {
      sender.awaitLine("CONNECTED", PeerProcess.START);
      Arrival killed = arrivals.poll(60, TimeUnit.SECONDS);
      assertTrue(killed != null, "the server saw no connection");
      awaitTaken(killed, 64 * 1024);
      sender.killHard();
      RdmaStreamException e = failure(killed.received(), Duration.ofSeconds(120));
      log("the killed sender's connection failed: " + e.getMessage());
      assertTrue(e.getMessage().contains(killed.peer().getAddress().getHostAddress()),
          e.getMessage());
    }
    long bytes = CLEAN_BYTES / 8;
    try (PeerProcess sender = PeerProcess.start(PATIENT_JVM, StreamSendMain.class, HOST,
        "" + port, "" + bytes)) {
      String sent = sender.awaitLine("SENT ", TRANSFER_WAIT);
      Arrival next = arrivals.poll(60, TimeUnit.SECONDS);
      assertTrue(next != null, "the server saw no second connection");
      assertEquals(new Received(bytes, crcOfPattern(bytes)),
          await(next.received(), TRANSFER_WAIT));
      assertEquals(bytes + " " + crcOfPattern(bytes), sent);
    }
    awaitResources(rdma, start);
    awaitKernelResources(kernelResourcesAtStart);
  }

  // ---- helpers

  /**
   * Sends {@code bytes} to the server, checks what it received, returns MB/s from the moment
   * the server took the connection (connection set-up is not the link's throughput).
   */
  private static double transfer(String what, long bytes) throws Exception {
    Pair<CompletionStage<Void>, Arrival> run = startSending(bytes, false);
    long t0 = System.nanoTime();
    await(run.first(), TRANSFER_WAIT);
    Received got = await(run.second().received(), TRANSFER_WAIT);
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertEquals(new Received(bytes, crcOfPattern(bytes)), got, what + ": what arrived");
    double mbPerS = bytes / seconds / 1e6;
    log(String.format("%s: %d bytes in %.2f s = %.2f MB/s, checksums equal", what, bytes,
        seconds, mbPerS));
    return mbPerS;
  }

  /**
   * A client stream of {@code bytes} of the pattern ({@code -1}: until it fails), and the
   * server's side of it. {@code paced}: 16 KiB pieces at 200 a second, so that it is still
   * running when a fault comes.
   */
  private static Pair<CompletionStage<Void>, Arrival> startSending(long bytes, boolean paced)
      throws InterruptedException {
    arrivals.clear();
    Source<ByteString, ?> data = StreamSendMain.patternPieces(bytes);
    if (paced) data = data.throttle(200, Duration.ofSeconds(1));
    CompletionStage<Void> client = data
        .via(rdma.outgoingConnection(HOST, server.localAddress().getPort()))
        .runWith(Sink.ignore(), system).thenApply(done -> null);
    Arrival arrival = arrivals.poll(120, TimeUnit.SECONDS);
    assertTrue(arrival != null, "the server saw no connection");
    return Pair.create(client, arrival);
  }

  private static long crcOfPattern(long bytes) {
    CRC32C crc = new CRC32C();
    byte[] b = new byte[64 * 1024];
    for (long at = 0; at < bytes; at += b.length) {
      int n = (int) Math.min(b.length, bytes - at);
      for (int i = 0; i < n; i++) b[i] = BulkTest.pattern(at + i);
      crc.update(b, 0, n);
    }
    return crc.getValue();
  }

  /**
   * The live resources once no connection of an earlier case is left (the server's side of one
   * may still be closing when its case ends): the baseline a case gives back.
   */
  private static ResourceCounts settledResources() throws InterruptedException {
    long deadline = System.nanoTime() + StreamsTestKit.WAIT.toNanos();
    ResourceCounts now = rdma.liveResources();
    while (now.qps() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(20);
      now = rdma.liveResources();
    }
    assertEquals(0, now.qps(), "an earlier case's connection is still open: " + now);
    return now;
  }

  private static void awaitTaken(Arrival a, long bytes) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (a.taken().get() < bytes) {
      assertTrue(System.nanoTime() < deadline, "the transfer never got going");
      Thread.sleep(10);
    }
  }

  private static RdmaStreamException failure(CompletionStage<?> stage, Duration within) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> stage.toCompletableFuture().get(within.toMillis(), TimeUnit.MILLISECONDS));
    return assertInstanceOf(RdmaStreamException.class, e.getCause());
  }

  /** {@code rdma resource show} without device indexes. */
  private static String kernelResources() throws IOException, InterruptedException {
    return run("rdma", "resource", "show").replaceAll("(?m)^\\d+: ", "");
  }

  /** The kernel frees a connection's objects a moment after the stream ends. */
  private static void awaitKernelResources(String expected) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    String now = kernelResources();
    while (!now.equals(expected) && System.nanoTime() < deadline) {
      Thread.sleep(200);
      now = kernelResources();
    }
    assertEquals(expected, now, "rdma resource show");
  }

  private static String run(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError(String.join(" ", cmd) + " failed: " + out);
    }
    return out;
  }

  private static void log(String line) {
    System.out.println("[faults] " + line);
    System.out.flush();
  }
}
