package dev.pekkordma.soft.shm;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * Someone scribbles on a live ring file while bytes flow through it (the peer may write any byte
 * of it at any time). Whatever they write, and whenever, the link ends in time, and only in
 * ways that name what happened: the bytes arrive (changed, if what was scribbled is something
 * an honest peer could have written: ring bytes, or a position within the rules, which the
 * fabric's frame checks then judge as they judge any bytes a peer sends), or a position is
 * refused naming the ring and the values, or a write waits out its bounded time naming the
 * setting (a waiting flag cleared, so no doorbell rang, or a reader starved of CPU). No other
 * exception, no thread stuck, nothing read or written outside the mapping (every copy's place
 * is computed from this side's own positions modulo the ring).
 */
class ScribbledRingPropertyTest {
  private static final int CAPACITY = RingFile.MIN_CAPACITY;
  private static final int STREAM = 4 * CAPACITY + 999;
  /** Long enough that a reader starved of CPU on a loaded machine seldom stalls a try. */
  private static final long SPACE_TIMEOUT = TimeUnit.SECONDS.toNanos(5);
  private Path dir;

  /** One scribble: {@code bytes} at {@code offset}, after {@code delayMicros}. */
  record Scribble(int offset, byte[] bytes, int delayMicros) {}

  enum Outcome { INTACT, VIOLATION, STALLED, DIVERGED }

  @BeforeProperty
  void makeDir() throws IOException {
    dir = Files.createTempDirectory("scribbled-ring");
  }

  @AfterProperty
  void removeDir() throws IOException {
    Files.deleteIfExists(dir);
  }

  /** Positions no honest peer could write: each is refused, naming the ring, never taken. */
  @Property(tries = 30)
  void positionsOutsideTheRulesAreRefusedNeverTaken(
      @ForAll("impossiblePositions") List<Scribble> scribbles) throws Exception {
    Outcome o = run(scribbles);
    Statistics.collect(o);
    assertTrue(o != Outcome.DIVERGED, "a position no honest peer writes was taken");
  }

  /**
   * Bytes anywhere in the file, positions within the rules or not: nothing but a named end
   * comes of it, in time.
   */
  @Property(tries = 30)
  void bytesScribbledAnywhereEndOnlyInNamedWays(@ForAll("anywhere") List<Scribble> scribbles)
      throws Exception {
    Statistics.collect(run(scribbles));
  }

  @Provide
  Arbitrary<List<Scribble>> impossiblePositions() {
    Arbitrary<Long> impossible = Arbitraries.oneOf(Arbitraries.longs().lessOrEqual(-1),
        Arbitraries.longs().greaterOrEqual(STREAM + 2L * CAPACITY));
    return scribble(positionField(Arbitraries.of(RingFile.PRODUCER, RingFile.CONSUMER)),
        impossible.map(ScribbledRingPropertyTest::bytes));
  }

  @Provide
  Arbitrary<List<Scribble>> anywhere() {
    int size = (int) RingFile.size(CAPACITY);
    Arbitrary<Scribble> bytes = one(Arbitraries.integers().between(0, size - 8),
        Arbitraries.bytes().array(byte[].class).ofMinSize(1).ofMaxSize(8));
    Arbitrary<Scribble> fields = one(positionField(Arbitraries.of(RingFile.PRODUCER,
            RingFile.CONSUMER, RingFile.WAITING)),
        Arbitraries.oneOf(Arbitraries.longs(), Arbitraries.longs().between(-2, 2L * STREAM))
            .map(ScribbledRingPropertyTest::bytes));
    return Arbitraries.oneOf(bytes, fields).list().ofMinSize(1).ofMaxSize(6);
  }

  private static Arbitrary<Integer> positionField(Arbitrary<Integer> field) {
    return Combinators.combine(Arbitraries.of(0, 1), field)
        .as((ring, f) -> RingFile.control(ring, CAPACITY) + f);
  }

  private static byte[] bytes(long v) {
    return java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(v)
        .array();
  }

  private static Arbitrary<List<Scribble>> scribble(Arbitrary<Integer> offset,
      Arbitrary<byte[]> value) {
    return one(offset, value).list().ofMinSize(1).ofMaxSize(6);
  }

  private static Arbitrary<Scribble> one(Arbitrary<Integer> offset, Arbitrary<byte[]> value) {
    return Combinators.combine(offset, value, Arbitraries.integers().between(0, 3000))
        .as(Scribble::new);
  }

  /** Streams {@link #STREAM} bytes through ring 0 while the scribbles land; how it ended. */
  private Outcome run(List<Scribble> scribbles) throws Exception {
    byte[] sent = RingLinkTest.random(STREAM, scribbles.hashCode());
    try (RingPair p = new RingPair(dir, CAPACITY, SPACE_TIMEOUT)) {
      CompletableFuture<Throwable> writer = CompletableFuture.supplyAsync(() -> {
        try {
          Random pieces = new Random(sent.length);
          for (int at = 0; at < sent.length; ) {
            int n = Math.min(1 + pieces.nextInt(20_000), sent.length - at);
            p.connecting.out().write(sent, at, n);
            p.connecting.out().flush();
            at += n;
          }
          return null;
        } catch (Throwable t) {
          return t;
        } finally {
          p.connecting.close(); // the reader ends after the ring's bytes
        }
      });
      CompletableFuture<Object> reader = CompletableFuture.supplyAsync(() -> {
        try {
          return p.accepting.in().readAllBytes();
        } catch (Throwable t) {
          return t;
        } finally {
          p.accepting.close();
          p.connecting.close(); // as the writer's process would, seeing the socket end
        }
      });
      for (Scribble s : scribbles) {
        TimeUnit.MICROSECONDS.sleep(s.delayMicros);
        p.made.map.put(s.offset, s.bytes);
      }
      Object read;
      Throwable wrote;
      try {
        read = reader.get(20, TimeUnit.SECONDS);
        wrote = writer.get(20, TimeUnit.SECONDS);
      } catch (TimeoutException e) {
        p.close();
        throw new AssertionError("the link hung after " + scribbles, e);
      }
      return outcome(sent, read, wrote);
    }
  }

  private static Outcome outcome(byte[] sent, Object read, Throwable wrote) {
    for (Object end : new Object[] {read, wrote}) {
      if (end instanceof RingViolation v) {
        assertTrue(v.getMessage().contains("shared-memory ring")
            && v.getMessage().contains("position"), v.getMessage());
        return Outcome.VIOLATION;
      }
    }
    if (wrote instanceof SocketTimeoutException t) {
      assertTrue(t.getMessage().contains("a test's space timeout"), t.getMessage());
      return Outcome.STALLED;
    }
    for (Object end : new Object[] {read, wrote}) {
      if (end instanceof Throwable t) fail("an end of another kind", t);
    }
    byte[] got = (byte[]) read;
    if (java.util.Arrays.equals(sent, got)) return Outcome.INTACT;
    assertTrue(got.length <= sent.length + CAPACITY, "bytes came from nowhere: " + got.length);
    return Outcome.DIVERGED;
  }
}
