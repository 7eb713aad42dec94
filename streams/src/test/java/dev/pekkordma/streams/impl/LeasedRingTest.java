package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.streams.ReceivedBuffer;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The ring's leases on their own: ring-order credits, wakes, misuse, and when memory goes. */
class LeasedRingTest {
  static final int SLOTS = 4;
  static final int SLOT = 64;

  final OffHeapBuffer memory = OffHeapBuffer.allocate(SLOTS * SLOT);
  final AtomicInteger wakes = new AtomicInteger();
  final AtomicInteger frees = new AtomicInteger();
  final LeasedRing ring = new LeasedRing(memory, SLOTS, SLOT, "the test", wakes::incrementAndGet,
      frees::incrementAndGet);

  @Test
  void aLeaseViewsItsSlotReadOnlyFromZeroToTheBytesWritten() {
    memory.view(0, SLOTS * SLOT).putLong(SLOT, 0x0123456789ABCDEFL); // slot 1, big-endian
    ring.lend(10, true);
    ReceivedBuffer b = ring.lend(12, false);
    ByteBuffer v = b.buffer();
    assertEquals(0, v.position());
    assertEquals(12, v.limit());
    assertEquals(12, b.length());
    assertFalse(b.endsElement());
    assertTrue(v.isReadOnly());
    assertTrue(v.isDirect());
    assertEquals(0x0123456789ABCDEFL, v.getLong(0));
    assertThrows(ReadOnlyBufferException.class, () -> v.put(0, (byte) 1));
  }

  @Test
  void creditsGoBackOnlyOverTheReleasedPrefix() {
    ReceivedBuffer[] b = new ReceivedBuffer[SLOTS];
    for (int i = 0; i < SLOTS; i++) b[i] = ring.lend(1, true);
    b[2].release();
    b[3].release();
    assertEquals(0, ring.reclaim(), "slot 0 and 1 are still lent");
    b[0].release();
    assertEquals(1, ring.reclaim());
    assertFalse(ring.allReturned());
    b[1].release();
    assertEquals(3, ring.reclaim(), "1, and 2 and 3 released before it");
    assertTrue(ring.allReturned());
    assertEquals(0, ring.reclaim());
    // the ring goes round: slot 0's lease again, for the next write
    assertSame(b[0], ring.lend(5, true));
  }

  @Test
  void aWriteBeyondTheCreditsIsSeen() {
    ReceivedBuffer[] b = new ReceivedBuffer[SLOTS];
    for (int i = 0; i < SLOTS; i++) {
      assertTrue(ring.nextSlotReclaimed(), "slot " + i + " is fresh");
      b[i] = ring.lend(1, true);
    }
    assertFalse(ring.nextSlotReclaimed(), "a fifth write would land in slot 0, still lent");
    assertEquals(0, ring.nextSlot());
    b[1].release();
    ring.reclaim();
    assertFalse(ring.nextSlotReclaimed(), "slot 1 came back, but slot 0 is next");
    b[0].release();
    ring.reclaim();
    assertTrue(ring.nextSlotReclaimed());
  }

  @Test
  void skippedWritesComeBackInTheirTurn() {
    ReceivedBuffer first = ring.lend(1, true);
    ring.skip();
    assertEquals(0, ring.reclaim(), "the skipped slot waits for the lent one before it");
    first.release();
    assertEquals(2, ring.reclaim());
  }

  @Test
  void releasesWakeTheStageOnceUntilTheWakeHasRun() {
    ReceivedBuffer a = ring.lend(1, true);
    ReceivedBuffer b = ring.lend(1, true);
    ReceivedBuffer c = ring.lend(1, true);
    ReceivedBuffer d = ring.lend(1, true);
    a.release();
    assertEquals(1, ring.reclaim(), "the stage, running anyway, takes it before its wake");
    b.release();
    assertEquals(1, wakes.get(), "the second release finds the wake still under way");
    assertEquals(1, ring.woken(), "the wake takes what came since");
    c.release();
    assertEquals(2, wakes.get(), "a release after the wake has run wakes again");
    d.release();
    assertEquals(2, ring.woken());
    assertTrue(ring.allReturned());
  }

  @Test
  void aSecondReleaseAndUseAfterReleaseFailNamingTheWrite() {
    ring.lend(1, true);
    ReceivedBuffer b = ring.lend(7, true);
    b.release();
    IllegalStateException twice = assertThrows(IllegalStateException.class, b::release);
    assertTrue(twice.getMessage().contains("write #1") && twice.getMessage().contains("slot 1")
        && twice.getMessage().contains("released already"), twice.getMessage());
    IllegalStateException used = assertThrows(IllegalStateException.class, b::buffer);
    assertTrue(used.getMessage().contains("used after release()"), used.getMessage());
    assertEquals(0, ring.reclaim(), "slot 0 is still lent");
    assertFalse(ring.freed());
  }

  @Test
  void theMemoryOutlivesTheStageUntilTheLastRelease() {
    ReceivedBuffer a = ring.lend(8, true);
    ReceivedBuffer b = ring.lend(8, true);
    memory.view(0, SLOTS * SLOT).putLong(0, 42);
    ring.close();
    assertFalse(ring.freed(), "two buffers are still lent");
    assertEquals(42, a.buffer().getLong(0), "readable after the stage is gone");
    b.release();
    assertFalse(ring.freed());
    assertEquals(0, wakes.get(), "no wakes for a stage that is gone");
    a.release();
    assertTrue(ring.freed(), "the last release frees the ring");
    assertEquals(1, frees.get(), "and says so once (the budget gets the bytes back)");
    assertThrows(IllegalStateException.class, () -> memory.address());
    assertThrows(IllegalStateException.class, a::release);
  }

  @Test
  void aRingWithNothingLentIsFreedWithTheStage() {
    ring.lend(1, true).release();
    ring.close();
    assertTrue(ring.freed());
  }
}
