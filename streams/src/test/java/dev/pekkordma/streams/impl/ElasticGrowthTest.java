package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A connection's ring and send buffers grow only once it has carried, at the small size, as
 * many bytes as the large ones hold: registering them costs at most what its traffic did, and a
 * short exchange under pressure does not grow at all.
 */
class ElasticGrowthTest {
  static final int LARGE_COUNT = 8;
  static final int LARGE_SIZE = 4096;
  static final long LARGE_BYTES = (long) LARGE_COUNT * LARGE_SIZE;
  final List<OffHeapBuffer> memory = new ArrayList<>();
  int opened;

  private SendBuffers.Area area(int count, int size) {
    OffHeapBuffer m = OffHeapBuffer.allocate((long) count * size);
    memory.add(m);
    return new SendBuffers.Area(new Registered(m, new FakeMr(m), null), count, size);
  }

  @AfterEach
  void free() {
    memory.forEach(OffHeapBuffer::close);
  }

  @Test
  void sendBuffersGrowOnceTheSmallOnesHaveWrittenWhatTheLargeHold() {
    SendBuffers b = new SendBuffers(area(2, 1024), () -> {
      opened++;
      return area(LARGE_COUNT, LARGE_SIZE);
    }, a -> { }, 0, LARGE_BYTES);
    assertTrue(b.take() >= 0);
    assertTrue(b.take() >= 0);
    assertEquals(-1, b.take(), "both small buffers in flight: the large ones are wanted");
    b.resize(false);
    assertEquals(0, opened, "nothing carried yet: no growth");
    b.wrote((int) LARGE_BYTES - 1);
    b.resize(false);
    assertEquals(0, opened, "a byte short of what the large ones hold");
    b.wrote(1);
    b.resize(false);
    assertEquals(1, opened, "earned");
    assertEquals(LARGE_SIZE, b.size(), "writes take the large buffers now");
  }

  @Test
  void theRingGrowsOnceTheSmallOneHasTakenWhatTheLargeHolds() {
    RingSizing sizing =
        RingSizing.of(
            new RingSizing.SizingSettings(true, 4, 1024, Duration.ofSeconds(2)),
            LARGE_COUNT,
            LARGE_SIZE);
    long writes = 0;
    // every write fills its slot: pressure, but growth waits until the small ring has taken
    // LARGE_BYTES
    for (; writes * 1024 < LARGE_BYTES; writes++) {
      assertNull(sizing.due(false, writes), "grew after " + writes * 1024 + " bytes");
      sizing.arrived(1024, false, 4, 1024, 1);
    }
    RingSizing.Plan p = sizing.due(false, writes);
    assertTrue(p != null && p.large(), "grew once it had taken " + LARGE_BYTES + " bytes");
    sizing.announced(p);
    sizing.announced(sizing.initial()); // back to small: the count starts again
    sizing.arrived(1024, false, 4, 1024, 4);
    assertNull(sizing.due(false, writes + 1), "a new small ring earns its growth again");
  }
}
