package dev.pekkordma.streams;

import static dev.pekkordma.streams.BulkTest.pattern;
import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.WAIT;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.ResourceCounts;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.apache.pekko.util.ByteStringBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The zero-copy bulk source: each write lent in place, its slot credited back on release and in
 * ring order, the close handshake waiting for releases, and a ring that outlives its stream for
 * as long as the application holds a buffer of it.
 */
class BufferSourceTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;
  static final int SLOTS = 4;
  static final int SLOT = 4096;
  /** How long a stopped sender is watched to see that it stays stopped. */
  static final long STILL_MILLIS = 300;

  @BeforeAll
  static void start() throws InterruptedException {
    system = StreamsTestKit.system("BufferSourceTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  /** A ring of four 4 KiB slots: four held buffers stop the sender. */
  static RdmaStreamSettings small() {
    return rdma.bulkSettings().withBufferSize(SLOT).withReceiveBuffers(SLOTS)
        .withSendBuffers(SLOTS);
  }

  /** Chunk {@code n}: its number, then the test pattern, {@code size} bytes in all. */
  static BulkChunk numbered(long n, int size, AtomicInteger written) {
    return buffer -> {
      written.incrementAndGet();
      buffer.putLong(n);
      for (int i = 8; i < size; i++) buffer.put(pattern(n * size + i));
    };
  }

  /** {@code b} is chunk {@code n}, in place: read-only, from 0 to its length. */
  static void check(ReceivedBuffer b, long n, int size) {
    ByteBuffer v = b.buffer();
    assertTrue(v.isReadOnly() && v.isDirect(), "a read-only view of registered memory");
    assertEquals(0, v.position());
    assertEquals(size, v.limit());
    assertEquals(size, b.length());
    assertTrue(b.endsElement(), "a BulkChunk is one write");
    assertEquals(n, v.getLong(0), "the chunk's number");
    for (int i = 8; i < size; i++) {
      if (v.get(i) != pattern(n * size + i)) fail("chunk " + n + ", byte " + i + " differs");
    }
  }

  static CompletionStage<TransferResult> send(Source<BulkChunk, ?> chunks, ServerBinding at,
      RdmaStreamSettings settings) {
    return chunks.runWith(rdma.bulkChunkSink(new InetSocketAddress(HOST,
        at.localAddress().getPort()), settings), system);
  }

  static Source<BulkChunk, ?> chunks(int count, AtomicInteger written) {
    return Source.range(0, count - 1).map(n -> numbered(n, SLOT, written));
  }

  /** A receiver whose buffers the test thread takes, and releases when it likes. */
  record Held(ServerBinding binding, UniqueKillSwitch killSwitch,
      BlockingQueue<ReceivedBuffer> buffers, CompletionStage<Done> done) {
    ReceivedBuffer take() throws InterruptedException {
      ReceivedBuffer b = buffers.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertNotNull(b, "no buffer within " + WAIT);
      return b;
    }

    /** Takes, checks and releases chunks {@code from} to {@code to - 1}. */
    void drain(int from, int to) throws InterruptedException {
      for (int n = from; n < to; n++) {
        ReceivedBuffer b = take();
        check(b, n, SLOT);
        b.release();
      }
    }
  }

  static Held held(RdmaStreamSettings settings) throws Exception {
    BlockingQueue<ReceivedBuffer> q = new LinkedBlockingQueue<>();
    Pair<Pair<CompletionStage<ServerBinding>, UniqueKillSwitch>, CompletionStage<Done>> run =
        rdma.bulkBufferSource(HOST, 0, settings).viaMat(KillSwitches.single(), Keep.both())
            .toMat(Sink.foreach(q::add), Keep.both()).run(system);
    return new Held(await(run.first().first()), run.first().second(), q, run.second());
  }

  /** A transfer into a small ring whose buffers the test thread takes: {@link #held}. */
  record Transfer(Held rx, CompletionStage<TransferResult> tx) {
    /** Takes chunks {@code from} to {@code count - 1}; then both sides end, leaving nothing. */
    void completes(int from, int count, ResourceCounts start) throws Exception {
      rx.drain(from, count);
      assertEquals(count, await(tx).messagesSent());
      await(rx.done());
      awaitResources(rdma, start);
    }
  }

  static Transfer transfer(Source<BulkChunk, ?> chunks) throws Exception {
    Held rx = held(small());
    return new Transfer(rx, send(chunks, rx.binding(), small()));
  }

  /** Waits for {@code value} to reach {@code expected}, then sees that it stays there. */
  static void reachesAndStays(String what, int expected, IntSupplier value)
      throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (value.getAsInt() < expected && System.nanoTime() < deadline) Thread.sleep(5);
    Thread.sleep(STILL_MILLIS);
    assertEquals(expected, value.getAsInt(), what);
  }

  @Test
  void chunksFromTheChunkSinkArriveIntactInOrderAndInPlace() throws Exception {
    ResourceCounts start = rdma.liveResources();
    int size = rdma.bulkSettings().bufferSize();
    int count = 48;
    Pair<CompletionStage<ServerBinding>, CompletionStage<Long>> rx = rdma.bulkBufferSource(HOST, 0)
        .toMat(Sink.fold(0L, (n, b) -> {
          check(b, n, size);
          b.release();
          return n + 1;
        }), Keep.both()).run(system);
    AtomicInteger written = new AtomicInteger();
    TransferResult result = await(send(Source.range(0, count - 1)
        .map(n -> numbered(n, size, written)), await(rx.first()), rdma.bulkSettings()));
    assertEquals((long) count * size, result.bytesSent());
    assertEquals(count, result.messagesSent());
    assertEquals(count, await(rx.second()));
    awaitResources(rdma, start);
  }

  /** Heap bytes per chunk a transfer allocated, and the threads that allocated most. */
  record Allocation(double perChunk, String topThreads) {}

  /**
   * Moves {@code count} chunks of 64 KiB, each read in place and released: the heap bytes every
   * thread of the JVM allocated meanwhile, per chunk.
   */
  static Allocation allocatedPerChunk(int count) throws Exception {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    RdmaStreamSettings settings = rdma.bulkSettings().withBufferSize(64 * 1024);
    long[] next = {0};
    BulkChunk chunk = buffer -> {
      buffer.putLong(0, next[0]++);
      buffer.position(buffer.limit());
    };
    Map<Long, Long> perThread = allocatedByThread(threads);
    long before = threads.getTotalThreadAllocatedBytes();
    Pair<CompletionStage<ServerBinding>, CompletionStage<Long>> rx =
        rdma.bulkBufferSource(HOST, 0, settings).toMat(Sink.fold(0L, (n, b) -> {
          if (b.buffer().getLong(0) != n) fail("chunk " + n + " out of order");
          b.release();
          return n + 1;
        }), Keep.both()).run(system);
    // a thousand chunks took 5 to 9 s in the VM: the wait grows with the transfer
    Duration transfer = WAIT.multipliedBy(Math.max(1, count / 1000));
    await(send(Source.repeat(chunk).take(count), await(rx.first()), settings), transfer);
    assertEquals(count, await(rx.second(), transfer));
    double perChunk = (threads.getTotalThreadAllocatedBytes() - before) / (double) count;
    Map<Long, Long> after = allocatedByThread(threads);
    StringBuilder top = new StringBuilder();
    after.entrySet().stream()
        .map(e -> Map.entry(e.getKey(),
            e.getValue() - perThread.getOrDefault(e.getKey(), 0L)))
        .sorted(Map.Entry.<Long, Long>comparingByValue().reversed()).limit(5)
        .forEach(e -> {
          ThreadInfo info = threads.getThreadInfo(e.getKey());
          top.append(info == null ? "#" + e.getKey() : info.getThreadName()).append(' ')
              .append(e.getValue()).append(" B; ");
        });
    return new Allocation(perChunk, top.toString());
  }

  private static Map<Long, Long> allocatedByThread(
      com.sun.management.ThreadMXBean threads) {
    long[] ids = threads.getAllThreadIds();
    long[] bytes = threads.getThreadAllocatedBytes(ids);
    Map<Long, Long> m = new HashMap<>();
    for (int i = 0; i < ids.length; i++) if (bytes[i] >= 0) m.put(ids[i], bytes[i]);
    return m;
  }

  @Test
  void theBufferSourceAllocatesFarLessThanItMoves() throws Exception {
    ResourceCounts start = rdma.liveResources();
    allocatedPerChunk(2000); // the JIT's turn
    // all threads of the JVM are counted, so what another test class left running (a
    // connection's teardown, a timer) adds to a run; the least of three is the transfer's own
    Allocation least = null;
    for (int run = 0; run < 3; run++) {
      Allocation a = allocatedPerChunk(2000);
      if (least == null || a.perChunk() < least.perChunk()) least = a;
    }
    // a ByteString source allocates each chunk's 64 KiB again; this one only what the stream
    // machinery (its async callbacks) and the connections' setup need: about 130 bytes a chunk
    assertTrue(least.perChunk() < 1024, "heap bytes allocated per 64 KiB chunk: "
        + least.perChunk() + ", most by " + least.topThreads());
    awaitResources(rdma, start);
  }

  @Test
  void byteStringsFromTheBulkSinkComeOneElementPerWrite() throws Exception {
    ResourceCounts start = rdma.liveResources();
    List<ByteString> sent = new ArrayList<>();
    long offset = 0;
    for (int size : new int[] {10000, 1, SLOT, 9000}) {
      byte[] b = new byte[size];
      for (int i = 0; i < size; i++) b[i] = pattern(offset + i);
      offset += size;
      sent.add(ByteString.fromArrayUnsafe(b));
    }
    List<Integer> writes = new ArrayList<>();
    List<ByteString> received = new ArrayList<>();
    ByteStringBuilder element = new ByteStringBuilder();
    Pair<CompletionStage<ServerBinding>, CompletionStage<Done>> rx =
        rdma.bulkBufferSource(HOST, 0, small()).toMat(Sink.foreach(b -> {
          writes.add(b.length());
          element.append(ByteString.fromByteBuffer(b.buffer()));
          if (b.endsElement()) received.add(element.result());
          if (b.endsElement()) element.clear();
          b.release();
        }), Keep.both()).run(system);
    int port = await(rx.first()).localAddress().getPort();
    await(Source.from(sent).runWith(rdma.bulkSink(new InetSocketAddress(HOST, port), small()),
        system));
    await(rx.second());
    assertEquals(List.of(SLOT, SLOT, 10000 - 2 * SLOT, 1, SLOT, SLOT, SLOT, 9000 - 2 * SLOT),
        writes, "bytes per write: at most a slot, a ByteString's last piece ends an element");
    assertEquals(sent, received);
    awaitResources(rdma, start);
  }

  @Test
  void heldBuffersStopTheSenderAndReleasingResumesIt() throws Exception {
    ResourceCounts start = rdma.liveResources();
    AtomicInteger written = new AtomicInteger();
    Transfer t = transfer(chunks(40, written));
    Held rx = t.rx();
    List<ReceivedBuffer> all = new ArrayList<>();
    for (int n = 0; n < SLOTS; n++) {
      all.add(rx.take());
      check(all.get(n), n, SLOT);
    }
    reachesAndStays("chunks written while every slot is held", SLOTS, written::get);
    assertTrue(rx.buffers().isEmpty());
    assertFalse(t.tx().toCompletableFuture().isDone(), "the sender waits, without an error");
    all.forEach(ReceivedBuffer::release);
    t.completes(SLOTS, 40, start);
  }

  @Test
  void slotsReleasedOutOfOrderAreCreditedInRingOrder() throws Exception {
    ResourceCounts start = rdma.liveResources();
    AtomicInteger written = new AtomicInteger();
    Transfer t = transfer(chunks(40, written));
    Held rx = t.rx();
    ReceivedBuffer[] b = new ReceivedBuffer[8];
    for (int n = 0; n < SLOTS; n++) b[n] = rx.take();
    b[2].release();
    b[3].release();
    reachesAndStays("written with slot 0 and 1 held, 2 and 3 released", SLOTS, written::get);
    b[0].release();
    reachesAndStays("written after slot 0 came back, slot 1 still held", 5, written::get);
    b[4] = rx.take();
    check(b[4], 4, SLOT);
    check(b[1], 1, SLOT);
    b[1].release();
    reachesAndStays("written after slot 1 came back: 1, 2 and 3 free", 8, written::get);
    for (int n = 5; n < 8; n++) {
      b[n] = rx.take();
      check(b[n], n, SLOT);
    }
    assertTrue(rx.buffers().isEmpty());
    for (int n = 4; n < 8; n++) b[n].release();
    t.completes(8, 40, start);
  }

  @Test
  void aSecondReleaseOrUseAfterReleaseFailsNamingItAndChangesNothing() throws Exception {
    ResourceCounts start = rdma.liveResources();
    Transfer t = transfer(chunks(2, new AtomicInteger()));
    ReceivedBuffer first = t.rx().take();
    ReceivedBuffer second = t.rx().take();
    first.release();
    // only two writes: slot 0 is not written again, so the lease is still the first chunk's
    IllegalStateException twice = assertThrows(IllegalStateException.class, first::release);
    assertTrue(twice.getMessage().contains("write #0")
        && twice.getMessage().contains("released already"), twice.getMessage());
    IllegalStateException used = assertThrows(IllegalStateException.class, first::buffer);
    assertTrue(used.getMessage().contains("used after release()"), used.getMessage());
    check(second, 1, SLOT);
    second.release();
    t.completes(2, 2, start);
  }

  @Test
  void theSenderCompletesOnlyOnceEveryBufferIsReleased() throws Exception {
    ResourceCounts start = rdma.liveResources();
    Transfer t = transfer(chunks(3, new AtomicInteger()));
    ReceivedBuffer[] b = {t.rx().take(), t.rx().take(), t.rx().take()};
    await(t.rx().done()); // the source completes: the sender has finished writing
    b[2].release();
    b[1].release();
    Thread.sleep(STILL_MILLIS);
    assertFalse(t.tx().toCompletableFuture().isDone(),
        "the FIN_ACK (\"your data reached my application\") waits for the last release");
    check(b[0], 0, SLOT);
    b[0].release();
    TransferResult result = await(t.tx());
    assertEquals(3, result.messagesSent());
    assertEquals(3L * SLOT, result.bytesSent());
    awaitResources(rdma, start);
  }

  @Test
  void cancellingWithBuffersHeldFreesTheConnectionAndKeepsTheirMemory() throws Exception {
    ResourceCounts start = rdma.liveResources();
    Transfer t = transfer(chunks(1_000_000, new AtomicInteger()));
    List<ReceivedBuffer> taken = new ArrayList<>();
    for (int n = 0; n < SLOTS; n++) taken.add(t.rx().take());
    t.rx().killSwitch().shutdown();
    // the sender had more to send: it learns that the receiver stopped reading and fails
    ExecutionException sender = assertThrows(ExecutionException.class, () -> await(t.tx()));
    RdmaStreamException lost = assertInstanceOf(RdmaStreamException.class, sender.getCause());
    assertTrue(lost.reason().contains("the peer stopped reading"), lost.reason());
    // every RDMA resource is gone, the registration of the ring too, with its buffers held
    awaitResources(rdma, start);
    for (int n = 0; n < SLOTS; n++) check(taken.get(n), n, SLOT);
    // late releases are fine (the last frees the ring's memory: LeasedRingTest), once each
    taken.forEach(ReceivedBuffer::release);
    assertThrows(IllegalStateException.class, () -> taken.get(0).release());
  }

  @Test
  void aSenderFailingWithBuffersHeldFailsTheSourceAndFreesEverything() throws Exception {
    ResourceCounts start = rdma.liveResources();
    CompletableFuture<Done> threeTaken = new CompletableFuture<>();
    Transfer t = transfer(chunks(3, new AtomicInteger())
        .concat(Source.completionStage(threeTaken).flatMapConcat(d ->
            Source.<BulkChunk>failed(new IllegalStateException("the sender aborts")))));
    List<ReceivedBuffer> taken = new ArrayList<>();
    for (int n = 0; n < 3; n++) taken.add(t.rx().take());
    threeTaken.complete(Done.getInstance());
    ExecutionException sender = assertThrows(ExecutionException.class, () -> await(t.tx()));
    assertEquals("the sender aborts", sender.getCause().getMessage());
    ExecutionException source = assertThrows(ExecutionException.class,
        () -> await(t.rx().done()));
    RdmaStreamException lost = assertInstanceOf(RdmaStreamException.class, source.getCause());
    assertTrue(lost.reason().contains("without closing the stream"), lost.reason());
    awaitResources(rdma, start);
    for (int n = 0; n < 3; n++) check(taken.get(n), n, SLOT);
    taken.forEach(ReceivedBuffer::release);
  }
}
