package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The deregistration fence: a region closed under a stream of remote writes and reads (and
 * RDMA READ answers landing in it) sees no byte change once {@code close()} returned, so the
 * application may reuse or free the memory at once, which these tests do, many times. A copy that
 * outran the fence would show as a byte overwritten after close(), a changed canary around the
 * region, or a crash.
 */
class DeregistrationFenceTest {
  private static final int REGION = 4 << 20;
  private static final int CANARY = 4096;
  private static final int CHUNK = REGION / 2; // a request outlasts close(), unless fenced
  private static final int ROUNDS = 60;
  private static final long REUSED = 0x0123456789abcdefL;
  private static final int ACCESS =
      Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

  private RdmaProvider provider;
  private DeviceContext ctx;
  private ProtectionDomain pd;
  private CompletionQueue cq;
  private QueuePair a;
  private QueuePair b;
  private OffHeapBuffer aMemory;
  private MemoryRegion aMr;

  @BeforeEach
  void setUp() {
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
    ctx = provider.open(provider.devices().get(0));
    pd = ctx.allocPd();
    cq = ctx.createCq(256, null);
    a = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64));
    b = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64));
    connect();
    aMemory = OffHeapBuffer.allocate(REGION);
    for (long at = 0; at < REGION; at += 8) aMemory.putLong(at, 0x5a5a5a5a5a5a5a5aL);
    aMr = pd.registerMemory(aMemory, ACCESS);
  }

  @AfterEach
  void tearDown() {
    a.close();
    b.close();
    aMr.close();
    aMemory.close();
    cq.close();
    pd.close();
    ctx.close();
    assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    provider.close();
  }

  /** Remote writes and reads target B's region; the test closes and frees it mid-stream. */
  @Test
  void aRegionClosedUnderRemoteWritesAndReadsIsNeverTouchedAgain() throws Exception {
    AtomicReference<long[]> target = new AtomicReference<>(); // {address, rkey}
    Traffic traffic = new Traffic(() -> target.get(), true);
    traffic.start();
    try {
      closeUnder(traffic, target, mr -> mr.rkey());
    } finally {
      traffic.stop();
    }
    assertTrue(traffic.errors.get() > 0, "no request ever saw its region go away: the test did"
        + " not close regions under traffic");
  }

  /** RDMA READ answers land in A's own region; the test closes and frees it mid-stream. */
  @Test
  void aLocalRegionClosedUnderReadAnswersIsNeverTouchedAgain() throws Exception {
    OffHeapBuffer source = OffHeapBuffer.allocate(REGION);
    for (long at = 0; at < REGION; at += 8) source.putLong(at, 0x1111111111111111L);
    MemoryRegion sourceMr = pd.registerMemory(source, ACCESS);
    AtomicReference<long[]> local = new AtomicReference<>(); // {address, lkey}
    Traffic traffic = new Traffic(() -> local.get(), false) {
      @Override
      void post(SendRequests s, long[] where) {
        for (int i = 0; i < 4; i++) {
          long at = (long) (i % 2) * CHUNK;
          s.add(i, WrOpcode.RDMA_READ, SendRequests.SIGNALED)
              .sge(where[0] + at, CHUNK, (int) where[1])
              .rdma(sourceMr.address() + at, sourceMr.rkey());
        }
      }
    };
    traffic.start();
    try {
      closeUnder(traffic, local, mr -> mr.lkey());
    } finally {
      traffic.stop();
      sourceMr.close();
      source.close();
    }
  }

  /**
   * The same across processes: a peer process streams writes into a region of ours over the
   * fabric; the region is closed, reused and freed under the stream, round after round.
   */
  @Test
  void aRegionClosedUnderWritesFromAnotherProcessIsNeverTouchedAgain() throws Exception {
    try (PeerJvm peer = PeerJvm.start("")) {
      for (int round = 0; round < 8; round++) {
        OffHeapBuffer memory = OffHeapBuffer.allocate(REGION + 2 * CANARY);
        long base = memory.address();
        NativeMemory.zero(base, REGION + 2 * CANARY);
        fillCanaries(base);
        MemoryRegion mr = pd.registerMemory(base + CANARY, REGION, ACCESS);
        // each round's first write opens a link (a handshake and a call back): 4 tries of 67 ms
        // are too few for it on a loaded machine
        HostileFabric.connect(b, peer.gid, peer.qpn, 17, 7);
        peer.connect(ctx.queryGid(1, 0), b.qpNum(), 17, 7);
        peer.ask("FILL " + round, "FILLED", java.time.Duration.ofSeconds(30));
        peer.ask("STREAM " + (1 << 20) + " " + mr.address() + " " + mr.rkey(), "STREAMING",
            java.time.Duration.ofSeconds(30));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (NativeMemory.getLong(base + CANARY + (1 << 20) - 8) == 0) { // a write landed
          assertTrue(System.nanoTime() < deadline, "round " + round + ": nothing landed");
          Thread.onSpinWait();
        }
        mr.close();
        assertUntouched(base, round);
        memory.close();
        String failed = peer.process.awaitLine("FAILED ", java.time.Duration.ofSeconds(30));
        assertTrue(failed.startsWith("REM_ACCESS_ERR"), "round " + round + ": " + failed);
      }
      peer.ask("EXIT", "BYE", java.time.Duration.ofSeconds(30));
    }
  }

  /**
   * {@link #ROUNDS} times: registers a region between canaries, publishes it to the traffic
   * (with the key {@code key} picks), closes it once a request on it completed, reuses the
   * memory at once and frees it.
   */
  private void closeUnder(Traffic traffic, AtomicReference<long[]> published,
      java.util.function.ToIntFunction<MemoryRegion> key) throws Exception {
    for (int round = 0; round < ROUNDS; round++) {
      OffHeapBuffer memory = OffHeapBuffer.allocate(REGION + 2 * CANARY);
      long base = memory.address();
      NativeMemory.zero(base, REGION + 2 * CANARY);
      fillCanaries(base);
      MemoryRegion mr = pd.registerMemory(base + CANARY, REGION, ACCESS);
      long placedBefore = traffic.placed.get();
      published.set(new long[] {mr.address(), key.applyAsInt(mr)});
      awaitTraffic(traffic, placedBefore);
      published.set(null);
      mr.close();
      assertUntouched(base, round);
      memory.close(); // freed at once, as the README allows
    }
  }

  private static void awaitTraffic(Traffic traffic, long placedBefore) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (traffic.placed.get() == placedBefore) {
      assertTrue(System.nanoTime() < deadline, "no request completed on the new region");
      traffic.checkAlive();
      Thread.sleep(0, 200_000);
    }
  }

  /** A thread posting 1 MiB requests at whatever target is published, reconnecting on error. */
  private class Traffic {
    final java.util.function.Supplier<long[]> where;
    final boolean remote;
    final AtomicLong placed = new AtomicLong();
    final AtomicLong errors = new AtomicLong();
    final AtomicBoolean running = new AtomicBoolean(true);
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Thread thread = new Thread(this::run, "fence-traffic");

    Traffic(java.util.function.Supplier<long[]> where, boolean remote) {
      this.where = where;
      this.remote = remote;
    }

    void start() {
      thread.start();
    }

    void stop() throws InterruptedException {
      running.set(false);
      thread.join(30_000);
      checkAlive();
    }

    void checkAlive() {
      Throwable t = failure.get();
      if (t != null) throw new AssertionError("the traffic thread failed", t);
    }

    /** Writes from A's memory into the target and reads it back into A's memory. */
    void post(SendRequests s, long[] target) {
      for (int i = 0; i < 4; i++) {
        long at = (long) (i % 2) * CHUNK;
        s.add(i, i < 2 ? WrOpcode.RDMA_WRITE : WrOpcode.RDMA_READ, SendRequests.SIGNALED)
            .sge(aMr, at, CHUNK).rdma(target[0] + at, (int) target[1]);
      }
    }

    private void run() {
      try (SendRequests s = new SendRequests(8, 1); WorkCompletions wc = new WorkCompletions(16)) {
        while (running.get()) {
          long[] target = where.get();
          if (target == null) {
            Thread.onSpinWait();
            continue;
          }
          s.clear();
          post(s, target);
          a.postSend(s);
          int done = 0;
          boolean failed = false;
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
          while (done < 4) {
            if (System.nanoTime() > deadline) throw new AssertionError("requests never completed");
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) failed |= !wc.ok(i);
            done += n;
          }
          if (failed) {
            errors.incrementAndGet();
            connect();
          } else {
            placed.incrementAndGet();
          }
        }
      } catch (Throwable t) {
        failure.set(t);
      }
    }
  }

  /** Brings A and B (back) to RTS, connected to each other. */
  private synchronized void connect() {
    Gid gid = ctx.queryGid(1, 0);
    for (QueuePair[] pair : new QueuePair[][] {{a, b}, {b, a}}) {
      if (pair[0].state() != QpState.RESET) pair[0].modify(new QpAttributes().state(QpState.RESET));
      pair[0].modify(QpAttributes.toInit(1, ACCESS));
      pair[0].modify(QpAttributes.toRtr(AddressVector.global(gid, 0, 1), pair[1].qpNum(), 0,
          Mtu.MTU_4096));
      pair[0].modify(QpAttributes.toRts(0));
    }
  }

  private static void fillCanaries(long base) {
    for (long at = 0; at < CANARY; at += 8) {
      NativeMemory.putLong(base + at, 0xc0ffeec0ffeeL);
      NativeMemory.putLong(base + CANARY + REGION + at, 0xc0ffeec0ffeeL);
    }
  }

  private static void assertCanaries(long base, int round) {
    for (long at = 0; at < CANARY; at += 8) {
      assertEquals(0xc0ffeec0ffeeL, NativeMemory.getLong(base + at),
          "round " + round + ": the canary before the region changed at " + at);
      assertEquals(0xc0ffeec0ffeeL, NativeMemory.getLong(base + CANARY + REGION + at),
          "round " + round + ": the canary after the region changed at " + at);
    }
  }

  /**
   * Nothing may land in the region once close() returned: the test reuses the memory at once,
   * as an application may, and any late byte of the provider's overwrites what it put there.
   */
  private static void assertUntouched(long base, int round) throws InterruptedException {
    long region = base + CANARY;
    for (long at = 0; at < REGION; at += 8) NativeMemory.putLong(region + at, REUSED);
    Thread.sleep(5);
    for (long at = 0; at < REGION; at += 8) {
      if (NativeMemory.getLong(region + at) != REUSED) {
        throw new AssertionError("round " + round + ": bytes landed at offset " + at
            + " of the region after close() returned");
      }
    }
    assertCanaries(base, round);
  }
}
