package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;
import static dev.pekkordma.cluster.TestCluster.result;
import static org.junit.jupiter.api.Assertions.*;

import ch.qos.logback.classic.Level;
import dev.pekkordma.cluster.PeerEvent.Refused;
import dev.pekkordma.cluster.TestCluster.Node;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.WcStatus;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A member that does not run our code ({@link HostilePeer}) gets its RDMA connection with x as a
 * member would and then sends what it likes. Whatever it sends, x and its actor system live on,
 * traffic between x and y (another member) goes on intact, nothing the peer did not legitimately
 * send reaches x's application, and x's live resources come back to where they were. A peer that
 * breaks the wire protocol is refused, in bounded time, with an error naming it and the rule.
 */
class HostileLinkTest {
  /** Refused within this of the offending frame. */
  static final Duration BOUND = Duration.ofSeconds(5);
  static final int HOSTILE = "hostile".hashCode();
  static Node x;
  static Node y;
  /** x's live resources with its connection to y: where each attack must leave them. */
  static ResourceCounts baseline;
  static LogCapture log;
  static Channel<String> xHostile;
  static Channel<String> xLegit;
  static Channel<String> yLegit;
  static TestProbe<Received<String>> inbox;
  static TestProbe<Received<String>> xInbox;
  static TestProbe<Received<String>> yInbox;

  @BeforeAll
  static void start() {
    log = LogCapture.install();
    String quick = "pekko-rdma.cluster.connect-wait = 3s";
    x = new Node(TestCluster.config(quick));
    y = new Node(TestCluster.config(quick));
    x.join(x);
    y.join(x);
    x.await(PeerEvent.Connected.class, y.address());
    xHostile = x.rdma.channel("hostile", Codec.utf8());
    inbox = x.kit.createTestProbe();
    xHostile.subscribe(inbox.getRef());
    xLegit = x.rdma.channel("legit", Codec.utf8());
    yLegit = y.rdma.channel("legit", Codec.utf8());
    xInbox = x.kit.createTestProbe();
    yInbox = y.kit.createTestProbe();
    xLegit.subscribe(xInbox.getRef());
    yLegit.subscribe(yInbox.getRef());
    baseline = x.resources();
  }

  @AfterAll
  static void stop() {
    if (y != null) y.shutdown();
    if (x != null) x.shutdown();
    if (log != null) log.uninstall();
  }

  // ---------------------------------------------------------------- malformed frames

  @Test
  void aFrameShorterThanItsHeaderIsAViolation() {
    violation(p -> List.of(Arrays.copyOf(HostilePeer.data(0, HOSTILE, "x"), 5)),
        "shorter than its 9-byte header");
  }

  @Test
  void aZeroLengthSendIsAViolation() {
    violation(p -> List.of(new byte[0]), "a frame of 0 bytes");
  }

  @Test
  void anUnknownKindIsAViolationNamingIt() {
    violation(p -> List.of(HostilePeer.frame(7, 0, HOSTILE, new byte[3])), "unknown frame kind 7");
  }

  @Test
  void aNegativeGrantIsAViolation() {
    violation(p -> List.of(HostilePeer.credit(-1)), "grants -1 credits");
  }

  @Test
  void grantsAddingPastIntegerMaxValueAreAViolation() {
    violation(p -> List.of(HostilePeer.credit(Integer.MAX_VALUE),
        HostilePeer.credit(Integer.MAX_VALUE)), "more than the");
  }

  @Test
  void aCreditFrameWithAChannelOrABodyIsAViolation() {
    violation(p -> List.of(HostilePeer.frame(2, 0, HOSTILE, "junk".getBytes())),
        "a credit frame of 13 bytes");
  }

  @Test
  void aFrameLongerThanTheReceiveBufferEndsTheConnectionNamingTheCause() {
    attack(p -> {
      int mark = log.mark();
      p.send(HostilePeer.data(0, HOSTILE, "x".repeat(8000)), HostilePeer.data(0, HOSTILE, "after"));
      assertTrue(p.awaitDisconnected(BOUND), "x did not end the connection");
      // x's receive completes LOC_LEN_ERR, which the QP actor may report as a flush (its async
      // event can come first): then x knows its QP failed unasked and names the likely cause
      log.await(mark, Level.WARN, l -> l.contains(p.address.toString())
          && (l.contains("longer than the 4096-byte receive buffer")
              || l.contains("larger than the 4096-byte receive buffers")), BOUND);
      assertEquals(List.of(), drain(inbox), "nothing after the oversized frame");
    });
  }

  // ---------------------------------------------------------------- credits

  @Test
  void dataBeyondTheCreditsGrantedIsAViolation() {
    attack(p -> {
      // 40 data frames at once, credits or not: x's 8 receives fill before x can grant any
      // more, and x had granted 6 (data must leave the last), so the 6th is already too many;
      // the rest wait in RNR retry
      List<String> sent = IntStream.range(0, 40).mapToObj(i -> "d" + i)
          .collect(Collectors.toList());
      p.send(sent.stream().map(s -> HostilePeer.data(0, HOSTILE, s))
          .collect(Collectors.toList()));
      assertRefused(p, "beyond the credits");
      List<String> got = drain(inbox).stream().map(Received::message)
          .collect(Collectors.toList());
      assertTrue(got.size() < sent.size(), "every frame was taken: " + got);
      assertEquals(sent.subList(0, got.size()), got, "a prefix, in order");
    });
  }

  @Test
  void aFloodOfLegitimateCreditFramesIsTakenWithBoundedMemory() {
    attack(p -> {
      long heap = usedHeapAfterGc();
      int mark = log.mark();
      for (int sent = 0; sent < 5000; ) {
        List<byte[]> batch = p.legitCredits(5000 - sent);
        p.send(batch);
        sent += batch.size();
      }
      // the link still carries messages both ways
      p.send(p.legitData(HOSTILE, "still here"));
      assertEquals(new Received<>(p.address, "still here"), inbox.receiveMessage(WAIT));
      p.autoCredit(true);
      result(xHostile.send(p.address, "to the peer"));
      long grown = usedHeapAfterGc() - heap;
      assertTrue(grown < 16 << 20, "the heap grew by " + grown + " bytes over 5000 frames");
      assertEquals(List.of(), log.since(mark, Level.WARN).stream()
          .filter(l -> l.contains(p.address.toString())).collect(Collectors.toList()));
    });
  }

  @Test
  void grantsWithinCreditsAreRefusedOnceTheyExceedAnyReceiveQueue() {
    violationAfter(p -> {
      // each frame within the credits x gave, each granting 100: no member has 4096+ receives
      for (int i = 0; i < 100 && p.credits() > 0; i++) {
        byte[] f = p.legitCredit();
        java.nio.ByteBuffer.wrap(f).putInt(1, 100);
        if (p.send(f).get(0) != WcStatus.SUCCESS) break;
        TestCluster.sleep(2);
      }
    }, "more than the");
  }

  // ---------------------------------------------------------------- one-sided

  @Test
  void aPeerThatKnowsABuffersKeyCannotWriteIntoIt() {
    attack(p -> {
      // x's connections only send and receive: nothing one-sided should reach x's memory
      List<MemoryRegion> slabs = SoftInternals.poolRegions(
          dev.pekkordma.actors.RdmaExtension.get(x.system()).provider());
      assertFalse(slabs.isEmpty(), "x has a buffer pool");
      MemoryRegion slab = slabs.get(0);
      long at = slab.address() + slab.length() - 64; // the last buffer's end, not in use
      byte[] before = new byte[64];
      NativeMemory.copyToArray(at, before, 0, 64);
      WcStatus status = p.write(at, slab.rkey(), 64, (byte) 0x5a);
      byte[] after = new byte[64];
      NativeMemory.copyToArray(at, after, 0, 64);
      assertArrayEquals(before, after, "the peer wrote into x's buffer (" + status + ")");
      assertNotEquals(WcStatus.SUCCESS, status);
      assertTrue(p.awaitDisconnected(BOUND), "x did not end the broken connection");
    });
  }

  // ---------------------------------------------------------------- channels

  @Test
  void aFrameForAChannelNobodyOpenedIsRefusedNamingItAndTheLinkGoesOn() {
    attack(p -> {
      int mark = log.mark();
      p.send(p.legitData(0x7e57, "nobody listens"), p.legitData(HOSTILE, "after"));
      assertEquals(new Received<>(p.address, "after"), inbox.receiveMessage(WAIT));
      log.await(mark, Level.WARN, l -> l.contains(p.address.toString())
          && l.contains(String.valueOf(0x7e57)), WAIT);
      assertTrue(drain(x.events).stream().noneMatch(e -> e.member().equals(p.address)
          && !(e instanceof PeerEvent.Connected)), "the link stays up");
    });
  }

  @Test
  void aFloodOfMessagesNobodyTakesIsDroppedWithBoundedMemoryAndLog() {
    attack(p -> {
      long heap = usedHeapAfterGc();
      int mark = log.mark();
      String big = "z".repeat(4000);
      int n = 5000; // 20 MB of messages: were they kept, the heap would show it
      for (int sent = 0; sent < n; ) {
        List<byte[]> batch = p.legitData(0x7e57, big, n - sent);
        p.send(batch);
        sent += batch.size();
      }
      p.send(p.legitData(HOSTILE, "after"));
      assertEquals(new Received<>(p.address, "after"), inbox.receiveMessage(WAIT));
      long grown = usedHeapAfterGc() - heap;
      assertTrue(grown < 16 << 20, "the heap grew by " + grown + " bytes over " + n + " frames");
      long lines = log.since(mark, Level.WARN).stream()
          .filter(l -> l.contains(p.address.toString()) && l.contains("not open here")).count();
      assertTrue(lines >= 1 && lines <= Inbound.LOGGED + n / Inbound.THEN_EVERY,
          lines + " lines logged for " + n + " refused messages");
    });
  }

  // ---------------------------------------------------------------- going away

  @Test
  void aPeerThatDisconnectsMidStreamFailsWhatWasInFlightAndLeaksNothing() {
    attack(p -> {
      int mark = log.mark();
      p.autoCredit(true);
      List<String> sent = IntStream.range(0, 400).mapToObj(i -> "m" + i)
          .collect(Collectors.toList());
      CompletionStage<Done> stream = Source.from(sent).runWith(xHostile.sink(p.address),
          x.system());
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (p.received.size() < 60 && System.nanoTime() < deadline) TestCluster.sleep(1);
      p.disconnect();
      long t0 = System.nanoTime();
      PeerEvent.Disconnected d = x.await(PeerEvent.Disconnected.class, p.address);
      assertTrue(d.reason().contains("peer"), d.reason());
      SendFailedException f = failure(stream);
      assertTrue(f.getMessage().contains(p.address.toString()), f.getMessage());
      assertTrue(System.nanoTime() - t0 < Duration.ofSeconds(10).toNanos(), "bounded");
      TestCluster.sleep(700); // past the wait for the CM to explain the flushes
      assertEquals(List.of(), log.since(mark, Level.WARN).stream()
          .filter(l -> l.contains("unasked")).collect(Collectors.toList()),
          "a peer's disconnect is not taken for a broken QP");
    });
  }

  // ---------------------------------------------------------------- connection requests

  @Test
  void connectionRequestsNamingNoMemberAreHeldBoundedThenRejected() {
    // anyone who reaches x's CM port may ask, naming any uid in its hello: x holds such a
    // request a while (that member's endpoint may be on its way), but not without bound
    Endpoint xe = result(x.rdma.selfEndpoint());
    InetSocketAddress cm = new InetSocketAddress(xe.host(), xe.port());
    int n = 250;
    RdmaProvider provider = SoftWire.provider();
    CmEventChannel ch = provider.createCmEventChannel();
    List<CmId> ids = new ArrayList<>();
    List<AutoCloseable> verbs = new ArrayList<>();
    int answered = 0;
    int held = 0;
    int issued = 0;
    long lastIssued = 0;
    boolean sampled = false;
    java.util.Random uids = new java.util.Random(7);
    try {
      for (int i = 0; i < n; i++) {
        CmId id = ch.createId(i);
        ids.add(id);
        id.resolveAddress(null, cm, BOUND);
      }
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (answered < n && System.nanoTime() < deadline) {
        // counted once the burst is in and those turned away are gone (a moment), while the
        // held ones wait (pekko-rdma.cluster.pending-request-timeout, 2 s)
        long since = System.nanoTime() - lastIssued;
        if (issued == n && since > 300_000_000L && since < 1_500_000_000L) {
          held = Math.max(held, x.resources().cmIds() - baseline.cmIds());
          sampled = true;
        }
        CmEvent e = ch.awaitEvent(Duration.ofMillis(10));
        if (e == null) continue;
        switch (e.type()) {
          case ADDR_RESOLVED -> e.id().resolveRoute(BOUND);
          case ROUTE_RESOLVED -> {
            ProtectionDomain pd = e.id().verbs().allocPd();
            CompletionQueue cq = e.id().verbs().createCq(4, null);
            verbs.add(0, pd);
            verbs.add(0, cq);
            e.id().createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(1)
                .maxRecvWr(1));
            e.id().connect(
                ConnectionParameters.withPrivateData(ConnectPrivateData.of(uids.nextLong())));
            issued++;
            lastIssued = System.nanoTime();
          }
          default -> answered++; // REJECTED, or anything else that ends the attempt
        }
      }
      assertEquals(n, answered, "every request was answered");
    } finally {
      for (CmId id : ids) {
        if (id.qp() != null) id.destroyQp();
      }
      for (AutoCloseable c : verbs) {
        try {
          c.close();
        } catch (Exception ex) {
          throw new AssertionError(ex);
        }
      }
      for (CmId id : ids) id.close();
      ch.close();
      provider.close();
    }
    // those held, and a few still being turned away; holding every one would show as near n
    assertTrue(sampled, "the count was taken while requests were held");
    assertTrue(held <= PendingRequests.MAX + 32, "x held " + held
        + " connection requests of no member at once");
    x.awaitResources(baseline);
    legitTrafficFlows();
  }

  // ---------------------------------------------------------------- the checks

  /** The peer sends {@code frames} (then a data frame within credits), and is refused. */
  private void violation(Function<HostilePeer, List<byte[]>> frames, String what) {
    violationAfter(p -> {
      List<byte[]> all = new ArrayList<>(frames.apply(p));
      all.add(HostilePeer.data(0, HOSTILE, "after the violation"));
      p.send(all);
    }, what);
  }

  private void violationAfter(java.util.function.Consumer<HostilePeer> attack, String what) {
    attack(p -> {
      attack.accept(p);
      assertRefused(p, what);
      assertEquals(List.of(), drain(inbox), "nothing after the violation reaches the application");
    });
  }

  /**
   * Connects a hostile peer, checks a legitimate message of it arrives, runs {@code attack}
   * while y streams to x, then checks y's stream arrived whole, x still talks to y, and x's live
   * resources come back once the peer is gone.
   */
  private void attack(java.util.function.Consumer<HostilePeer> attack) {
    List<String> stream = IntStream.range(0, 200).mapToObj(i -> "y" + i)
        .collect(Collectors.toList());
    drainNow(inbox);
    Address peer;
    try (HostilePeer p = HostilePeer.join(x)) {
      peer = p.address;
      p.connect();
      p.send(p.legitData(HOSTILE, "hello from " + p.address));
      assertEquals(new Received<>(p.address, "hello from " + p.address),
          inbox.receiveMessage(WAIT));
      CompletionStage<Done> legit = Source.from(stream).runWith(yLegit.sink(x.address()),
          y.system());
      attack.accept(p);
      result(legit);
    }
    List<String> got = xInbox.receiveSeveralMessages(stream.size(), WAIT).stream()
        .peek(r -> assertEquals(y.address(), r.from())).map(Received::message)
        .collect(Collectors.toList());
    assertEquals(stream, got, "y's stream to x, during the attack");
    legitTrafficFlows();
    x.await(PeerEvent.Removed.class, peer);
    x.awaitResources(baseline);
  }

  private static void legitTrafficFlows() {
    result(xLegit.send(y.address(), "x is fine"));
    assertEquals(new Received<>(x.address(), "x is fine"), yInbox.receiveMessage(WAIT));
    assertFalse(x.system().whenTerminated().isCompleted());
  }

  /** The link to {@code p} failed in bounded time, naming the member and what it broke. */
  private static void assertRefused(HostilePeer p, String what) {
    long t0 = System.nanoTime();
    int mark = 0;
    Refused r = x.await(Refused.class, p.address);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertEquals("PROTOCOL_VIOLATION", r.reason().name(), r.toString());
    assertTrue(r.detail().contains(what) && r.detail().contains(p.address.toString()),
        r.detail());
    assertTrue(ms < BOUND.toMillis(), "refused after " + ms + " ms");
    assertTrue(p.awaitDisconnected(BOUND), "x did not end the connection");
    log.await(mark, Level.ERROR, l -> l.contains(p.address.toString()) && l.contains(what),
        BOUND);
    SendFailedException f = failure(xHostile.send(p.address, "more"));
    assertTrue(f.getMessage().contains(what), f.getMessage());
  }

  private static <T> List<T> drain(TestProbe<T> probe) {
    TestCluster.sleep(200);
    return drainNow(probe);
  }

  private static <T> List<T> drainNow(TestProbe<T> probe) {
    List<T> all = new ArrayList<>();
    while (true) {
      try {
        all.add(probe.receiveMessage(Duration.ofMillis(20)));
      } catch (AssertionError e) {
        return all;
      }
    }
  }

  private static SendFailedException failure(CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      return assertInstanceOf(SendFailedException.class, e.getCause());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("it succeeded");
  }

  private static long usedHeapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
      TestCluster.sleep(50);
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

}
