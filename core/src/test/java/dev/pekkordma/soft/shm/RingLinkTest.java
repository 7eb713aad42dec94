package dev.pekkordma.soft.shm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One same-host link's rings as streams: what a fabric connection needs of them. */
class RingLinkTest {
  private static final int CAPACITY = RingFile.MIN_CAPACITY;
  private static final Duration T = Duration.ofSeconds(30);
  @TempDir Path dir;

  @Test
  void bytesGoBothWaysAndWrapAroundTheRingInPartialReads() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      assertTimeoutPreemptively(T, () -> {
        byte[] sent = random(5 * CAPACITY + 12345, 1);
        CompletableFuture<byte[]> got = readAsync(p.accepting.in(), sent.length, 1000);
        writeInPieces(p.connecting.out(), sent, 7777);
        assertArrayEquals(sent, got.get(), "five laps of the ring, in odd pieces");
        byte[] back = random(3 * CAPACITY, 2);
        CompletableFuture<byte[]> gotBack = readAsync(p.connecting.in(), back.length, 333);
        writeInPieces(p.accepting.out(), back, CAPACITY); // a whole ring per write: it waits
        assertArrayEquals(back, gotBack.get(), "the other direction");
      });
    }
  }

  @Test
  void nothingIsSeenBeforeAFlushAndAReadTakesAllThatIsThere() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      OutputStream out = p.connecting.out();
      InputStream in = p.accepting.in();
      out.write(new byte[100]);
      out.write(new byte[200]);
      assertEquals(0, in.available(), "written, not yet published");
      out.flush();
      assertEquals(300, in.available());
      assertEquals(300, in.read(new byte[1000]), "one read takes the whole batch");
    }
  }

  @Test
  void aReaderWaitingOnAnEmptyRingIsWokenByTheDoorbell() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      assertTimeoutPreemptively(T, () -> {
        for (int round = 0; round < 200; round++) { // each read finds the ring empty and waits
          CompletableFuture<byte[]> got = readAsync(p.accepting.in(), 1, 1);
          if (round % 2 == 0) Thread.sleep(1);
          p.connecting.out().write(round);
          p.connecting.out().flush();
          assertEquals((byte) round, got.get()[0]);
        }
      });
    }
  }

  @Test
  void theSocketsEndEndsTheStreamAfterTheRingsBytes() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      byte[] sent = random(1000, 3);
      p.connecting.out().write(sent);
      p.connecting.out().flush();
      p.connecting.close(); // the peer goes: its socket closes
      assertTimeoutPreemptively(T, () -> {
        byte[] got = p.accepting.in().readNBytes(5000);
        assertArrayEquals(sent, got, "what the ring held, then the end");
        assertEquals(-1, p.accepting.in().read());
      });
    }
  }

  @Test
  void closingFromAnotherThreadWakesABlockedReader() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      CompletableFuture<Throwable> reader = CompletableFuture.supplyAsync(() -> {
        try {
          p.accepting.in().read();
          return null;
        } catch (Throwable t) {
          return t;
        }
      });
      Thread.sleep(100); // it spins, then blocks on the doorbell
      p.accepting.close();
      Throwable t = reader.get(30, TimeUnit.SECONDS);
      assertTrue(t instanceof IOException, "the read ends in an IOException: " + t);
    }
  }

  @Test
  void closingFromAnotherThreadEndsAWriterWaitingForRoom() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(60))) {
      CompletableFuture<Throwable> writer = CompletableFuture.supplyAsync(() -> {
        try {
          p.connecting.out().write(new byte[2 * CAPACITY]); // nobody reads: it waits for room
          return null;
        } catch (Throwable t) {
          return t;
        }
      });
      Thread.sleep(100);
      p.connecting.close();
      Throwable t = writer.get(30, TimeUnit.SECONDS);
      assertTrue(t instanceof IOException && t.getMessage().contains("closed"), "" + t);
    }
  }

  @Test
  void aLinkClosedHereIsClosedNotThePeersViolation() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      p.connecting.close();
      IOException w = assertThrows(IOException.class, () -> {
        p.connecting.out().write(new byte[8]);
        p.connecting.out().flush();
      });
      assertFalse(w instanceof RingViolation, "closing is no one's violation: " + w);
      IOException r = assertThrows(IOException.class, () -> p.connecting.in().read());
      assertFalse(r instanceof RingViolation, "closing is no one's violation: " + r);
    }
  }

  @Test
  void aRingThatStaysFullFailsTheWriteNamingTheSetting() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.MILLISECONDS.toNanos(200))) {
      SocketTimeoutException e = assertThrows(SocketTimeoutException.class,
          () -> p.connecting.out().write(new byte[CAPACITY + 1]));
      assertTrue(e.getMessage().contains("a test's space timeout")
          && e.getMessage().contains(p.made.name()), e.getMessage());
    }
  }

  @Test
  void theFileIsGoneOnceBothSidesMappedIt() throws Exception {
    try (RingPair p = new RingPair(dir, CAPACITY, TimeUnit.SECONDS.toNanos(30))) {
      try (var files = Files.list(dir)) {
        assertEquals(0, files.count());
      }
      p.connecting.out().write(42);
      p.connecting.out().flush();
      assertEquals(42, p.accepting.in().read(), "the mappings outlive the name");
    }
  }

  static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  static void writeInPieces(OutputStream out, byte[] b, int piece) throws IOException {
    for (int at = 0; at < b.length; at += piece) {
      out.write(b, at, Math.min(piece, b.length - at));
      out.flush();
    }
  }

  static CompletableFuture<byte[]> readAsync(InputStream in, int n, int piece) {
    return CompletableFuture.supplyAsync(() -> {
      byte[] b = new byte[n];
      int at = 0;
      try {
        while (at < n) {
          int got = in.read(b, at, Math.min(piece, n - at));
          if (got < 0) throw new IOException("ended after " + at);
          at += got;
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      return b;
    });
  }

  @Test
  void aRingWhoseFileThePeerTruncatedFailsAsItsViolation() throws Exception {
    // the peer may shrink the file through a descriptor of its own: touching the lost pages
    // faults, and that must reach the link as the peer's violation, not as an InternalError
    RingFile made = RingFile.create(dir, CAPACITY, RingPair.BINDING);
    RingFile opened = RingFile.open(dir, made.name(), CAPACITY, RingPair.BINDING);
    try (java.nio.channels.FileChannel f = java.nio.channels.FileChannel.open(
        dir.resolve(made.name()), java.nio.file.StandardOpenOption.WRITE)) {
      f.truncate(0);
    }
    RingLink writer = new RingLink(made, true, InputStream.nullInputStream(),
        OutputStream.nullOutputStream(), () -> { }, "the accepting side", 1_000_000_000L, "t");
    RingLink reader = new RingLink(opened, false, InputStream.nullInputStream(),
        OutputStream.nullOutputStream(), () -> { }, "the connecting side", 1_000_000_000L, "t");
    RingViolation w = assertThrows(RingViolation.class, () -> {
      writer.out().write(new byte[100]);
      writer.out().flush();
    });
    assertTrue(w.getMessage().contains("truncated"), w.getMessage());
    RingViolation r = assertThrows(RingViolation.class, () -> reader.in().read(new byte[10]));
    assertTrue(r.getMessage().contains("truncated"), r.getMessage());
  }
}
