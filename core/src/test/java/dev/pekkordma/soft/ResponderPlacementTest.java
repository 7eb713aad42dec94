package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.*;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The software provider places an incoming WRITE's data outside the responder QP's lock, as a
 * NIC places packets: the owner's posts do not wait for the copy, and destroying the QP ends it
 * (its memory may be freed right after) waiting only for the chunk in progress. A write big
 * enough to watch being placed shows both.
 */
class ResponderPlacementTest {
  private static final int SIZE = 256 << 20;
  private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;

  private RdmaProvider provider;
  private DeviceContext ctx;
  private ProtectionDomain pd;
  private CompletionQueue cq;
  private QueuePair a;
  private QueuePair b;
  private OffHeapBuffer source;
  private OffHeapBuffer target;
  private MemoryRegion sourceMr;
  private MemoryRegion targetMr;

  @BeforeEach
  void connect() {
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
    ctx = provider.open(provider.devices().get(0));
    pd = ctx.allocPd();
    cq = ctx.createCq(64, null);
    a = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    b = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    Gid gid = ctx.queryGid(1, 0);
    for (QueuePair[] pair : new QueuePair[][] {{a, b}, {b, a}}) {
      pair[0].modify(QpAttributes.toInit(1, ACCESS));
      pair[0].modify(QpAttributes.toRtr(AddressVector.global(gid, 0, 1), pair[1].qpNum(), 0,
          Mtu.MTU_4096));
      pair[0].modify(QpAttributes.toRts(0));
    }
    source = OffHeapBuffer.allocate(SIZE);
    for (long at = 0; at < SIZE; at += 4096) source.putLong(at, 0x0101010101010101L);
    source.putLong(SIZE - 8, 0x0101010101010101L);
    target = OffHeapBuffer.allocate(SIZE);
    sourceMr = pd.registerMemory(source, ACCESS);
    targetMr = pd.registerMemory(target, ACCESS);
  }

  @AfterEach
  void close() {
    if (a != null) a.close();
    if (b != null) b.close();
    sourceMr.close();
    targetMr.close();
    source.close();
    target.close();
    cq.close();
    pd.close();
    ctx.close();
    assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    provider.close();
  }

  @Test
  void postingToTheResponderDoesNotWaitForAWriteBeingPlaced() throws Exception {
    CompletableFuture<Void> writing = writeWhole();
    awaitPlacementStarted();
    try (RecvRequests r = new RecvRequests(1, 1)) {
      r.add(1).sge(targetMr, 0, 8);
      b.postRecv(r);
    }
    assertEquals(0, target.getLong(SIZE - 8), "postRecv returned only after the whole write was"
        + " placed: it waited for the copy");
    writing.get(30, TimeUnit.SECONDS);
  }

  @Test
  void destroyingTheResponderEndsPlacementBeforeItReturns() throws Exception {
    CompletableFuture<Void> writing = writeWhole();
    awaitPlacementStarted();
    b.close();
    long placed = checksum();
    Thread.sleep(200);
    assertEquals(placed, checksum(), "bytes landed in the QP's memory after its destruction"
        + " returned");
    assertEquals(0, target.getLong(SIZE - 8), "the whole write was placed before close()"
        + " returned: close waited for all of it, not for one chunk");
    b = null;
    writing.get(30, TimeUnit.SECONDS); // the requester's result does not matter here
  }

  private long checksum() {
    long sum = 0;
    for (long at = 0; at < SIZE; at += 4096) sum = sum * 31 + target.getLong(at);
    return sum;
  }

  /** One signalled WRITE of the whole source, posted from another thread (which copies it). */
  private CompletableFuture<Void> writeWhole() {
    return CompletableFuture.runAsync(() -> {
      try (SendRequests s = new SendRequests(1, 1)) {
        s.add(7, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(sourceMr, 0, SIZE)
            .rdma(targetMr.address(), targetMr.rkey());
        a.postSend(s);
      }
    });
  }

  private void awaitPlacementStarted() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (target.getLong(0) == 0) {
      assertTrue(System.nanoTime() < deadline, "the write never started");
      Thread.onSpinWait();
    }
    assertEquals(0, target.getLong(SIZE - 8), "the write was placed before the test could look"
        + " (the machine is too fast for " + (SIZE >> 20) + " MiB)");
  }
}
