package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The receiving bookkeeping over a real ring of memory, written as the peer's NIC would. */
class ReceiverTest {
  static final int SLOTS = 4;
  static final int SLOT = 16;
  final OffHeapBuffer ring = OffHeapBuffer.allocate(SLOTS * SLOT);
  long written;

  @AfterEach
  void free() {
    ring.close();
  }

  /** The peer's next write: into slot written % SLOTS. */
  private void arrive(Receiver r, String text, byte kind) {
    byte[] b = text.getBytes(StandardCharsets.US_ASCII);
    NativeMemory.copyFromArray(b, 0, ring.address() + (written++ % SLOTS) * SLOT, b.length);
    assertTrue(r.arrivals.add(b.length, kind));
  }

  @Test
  void writesComeOutInOrderAndEachTakenSlotIsACreditOwed() {
    Receiver r = new Receiver(ring, SLOTS, SLOT, SLOTS + 8, true);
    arrive(r, "one", ArrivedWrites.END);
    arrive(r, "two", ArrivedWrites.END);
    assertEquals(ByteString.fromString("one"), r.take());
    assertEquals(ByteString.fromString("two"), r.take());
    assertEquals(2, r.takeCredits());
    assertEquals(0, r.takeCredits(), "owed once");
    assertEquals(2, r.received.messages());
    assertEquals(6, r.received.bytes());
  }

  @Test
  void aByteStringSplitIntoWritesIsPutTogetherAgain() {
    Receiver r = new Receiver(ring, SLOTS, SLOT, SLOTS + 8, true);
    arrive(r, "hel", ArrivedWrites.MORE);
    arrive(r, "lo ", ArrivedWrites.MORE);
    assertNull(r.take());
    assertNull(r.take());
    assertTrue(r.partial());
    assertEquals(0, r.takenWhole(), "neither piece is taken whole yet");
    arrive(r, "world", ArrivedWrites.END);
    assertEquals(ByteString.fromString("hello world"), r.take());
    assertFalse(r.partial());
    assertEquals(3, r.takenWhole());
    assertEquals(3, r.creditsOwed(), "every slot is free again");
  }

  @Test
  void moreArrivalsThanReceivesIsThePeerWritingWithoutCredit() {
    ArrivedWrites a = new ArrivedWrites(2);
    assertTrue(a.add(1, ArrivedWrites.END));
    assertTrue(a.add(1, ArrivedWrites.END));
    assertFalse(a.add(1, ArrivedWrites.END));
  }

  @Test
  void discardingFreesSlotsWithoutCopying() {
    Receiver r = new Receiver(ring, SLOTS, SLOT, SLOTS + 8, true);
    r.discarding = true;
    arrive(r, "dropped", ArrivedWrites.END);
    assertNull(r.take());
    assertEquals(1, r.takeCredits());
    assertEquals(0, r.received.messages());
  }
}
