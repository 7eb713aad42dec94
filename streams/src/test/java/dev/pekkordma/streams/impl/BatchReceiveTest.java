package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * BATCH writes as the receiver takes them, from a real ring of memory: the ByteStrings come out
 * one by one with their boundaries, the slot is a credit only once the last is taken, and any
 * bytes at all in a BATCH's slot give either exactly the ByteStrings a checker finds in them or a
 * protocol error, never a byte from outside the write.
 */
class BatchReceiveTest {
  static final int SLOTS = 4;
  static final int SLOT = 256;

  /** Each element's length (big-endian) and bytes. */
  static byte[] batch(byte[]... elements) {
    int total = 0;
    for (byte[] e : elements) total += 4 + e.length;
    ByteBuffer b = ByteBuffer.allocate(total);
    for (byte[] e : elements) b.putInt(e.length).put(e);
    return b.array();
  }

  private static Receiver receiver(OffHeapBuffer ring, long maxMessage) {
    Receiver r = new Receiver(ring, SLOTS, SLOT, SLOTS + 8, true);
    r.maxMessage(maxMessage, "x.max-message-size");
    return r;
  }

  /** Writes {@code bytes} into {@code slot} and queues it as a BATCH of {@code length}. */
  private static void arrive(OffHeapBuffer ring, Receiver r, int slot, byte[] bytes, int length) {
    NativeMemory.copyFromArray(bytes, 0, ring.address() + (long) slot * SLOT, bytes.length);
    assertTrue(r.arrivals.add(length, ArrivedWrites.BATCH));
  }

  @Test
  void itsByteStringsComeOutOneByOneAndItsSlotIsFreedAfterTheLast() {
    try (OffHeapBuffer ring = OffHeapBuffer.allocate(SLOTS * SLOT)) {
      Receiver r = receiver(ring, Long.MAX_VALUE);
      byte[] b = batch("one".getBytes(), new byte[0], "three".getBytes());
      arrive(ring, r, 0, b, b.length);
      arrive(ring, r, 1, batch("four".getBytes()), 8);
      assertEquals(ByteString.fromString("one"), r.take());
      assertEquals(0, r.creditsOwed(), "the slot still holds two more");
      assertEquals(ByteString.emptyByteString(), r.take());
      assertEquals(ByteString.fromString("three"), r.take());
      assertEquals(1, r.creditsOwed());
      assertEquals(1, r.arrivals.size());
      assertEquals(ByteString.fromString("four"), r.take(), "the next write, from slot 1");
      assertEquals(4, r.received.messages());
      assertEquals(12, r.received.bytes());
      assertEquals(2, r.takenWhole());
    }
  }

  @Test
  void aByteStringOverMaxMessageSizeFailsNamingTheSetting() {
    try (OffHeapBuffer ring = OffHeapBuffer.allocate(SLOTS * SLOT)) {
      Receiver r = receiver(ring, 3);
      byte[] b = batch("abc".getBytes(), "abcd".getBytes());
      arrive(ring, r, 0, b, b.length);
      assertEquals(ByteString.fromString("abc"), r.take());
      IllegalStateException e = assertThrows(IllegalStateException.class, r::take);
      assertTrue(e.getMessage().contains("x.max-message-size"), e.getMessage());
    }
  }

  @Test
  void discardingDropsTheRestOfABatchAtOnce() {
    try (OffHeapBuffer ring = OffHeapBuffer.allocate(SLOTS * SLOT)) {
      Receiver r = receiver(ring, Long.MAX_VALUE);
      byte[] b = batch("a".getBytes(), "b".getBytes(), "c".getBytes());
      arrive(ring, r, 0, b, b.length);
      assertEquals(ByteString.fromString("a"), r.take());
      r.discarding = true;
      assertNull(r.take());
      assertEquals(0, r.arrivals.size());
      assertEquals(1, r.takeCredits());
    }
  }

  /**
   * Any bytes, any length the completion claims (within the slot): the receiver gives what a
   * straightforward parse of those bytes gives, or fails with a protocol error where it fails.
   */
  @Property(tries = 3000)
  void anyBytesInABatchGiveItsByteStringsOrAProtocolError(
      @ForAll @Size(max = SLOT) byte[] bytes, @ForAll @IntRange(min = 0, max = 40) int shorten,
      @ForAll @IntRange(min = 0, max = 300) int maxMessage) {
    int length = Math.max(0, bytes.length - shorten);
    List<ByteString> expected = new ArrayList<>();
    String failure = parse(bytes, length, maxMessage, expected);
    try (OffHeapBuffer ring = OffHeapBuffer.allocate(SLOTS * SLOT)) {
      // what lies past the write is marked, so that reading it would show
      for (int i = 0; i < SLOTS * SLOT; i++) NativeMemory.putByte(ring.address() + i, (byte) 0x5a);
      Receiver r = receiver(ring, maxMessage);
      arrive(ring, r, 0, bytes, length);
      List<ByteString> got = new ArrayList<>();
      String error = null;
      try {
        while (r.arrivals.size() > 0) got.add((ByteString) r.take());
      } catch (IllegalStateException e) {
        error = e.getMessage();
      }
      assertEquals(expected, got);
      if (failure == null) {
        assertNull(error);
        assertEquals(1, r.creditsOwed());
      } else {
        assertTrue(error != null && error.startsWith("protocol error") && error.contains(failure),
            failure + " / " + error);
      }
    }
  }

  /** The checker: the elements, or what is wrong; an empty write is one (the validator's). */
  private static String parse(byte[] b, int length, int max, List<ByteString> out) {
    int at = 0;
    do {
      if (length - at < 4) return "too few";
      int n = ByteBuffer.wrap(b, at, 4).getInt();
      if (n < 0 || n > length - at - 4) return "only " + (length - at - 4) + " follow";
      if (n > max) return "max-message-size";
      out.add(ByteString.fromArray(b, at + 4, n));
      at += 4 + n;
    } while (at < length);
    return null;
  }
}
