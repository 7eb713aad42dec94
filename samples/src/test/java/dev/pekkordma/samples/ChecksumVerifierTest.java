package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class ChecksumVerifierTest {
  @Test
  void acceptsMatchingCounts() {
    ChecksumVerifier.ChecksumReport r = ChecksumVerifier.verify(100, 2, 0xcafe, 100, 2, 0xcafe);
    assertTrue(r.ok());
    assertEquals("checksum OK", r.describe());
  }

  @Test
  void rejectsAWrongChecksum() {
    ChecksumVerifier.ChecksumReport r = ChecksumVerifier.verify(100, 2, 0xcafe, 100, 2, 0xbeef);
    assertFalse(r.ok());
    assertTrue(r.describe().contains("MISMATCH"), r.describe());
    assertTrue(r.describe().contains("0000cafe") && r.describe().contains("0000beef"),
        r.describe());
  }

  @Test
  void rejectsMissingBytesOrChunks() {
    assertFalse(ChecksumVerifier.verify(100, 2, 1, 99, 2, 1).ok());
    assertFalse(ChecksumVerifier.verify(100, 2, 1, 100, 1, 1).ok());
  }

  @Test
  void aFlippedByteChangesTheCrc() {
    try (OffHeapBuffer b = OffHeapBuffer.allocate(4096)) {
      DataPattern.fill(b.address(), 4096, 7, 3);
      int before = crc(b.view(0, 4096));
      byte[] one = new byte[1];
      b.get(1234, one, 0, 1);
      one[0] ^= 0x10;
      b.put(1234, one, 0, 1);
      assertNotEquals(before, crc(b.view(0, 4096)));
    }
  }

  @Test
  void thePatternIsDeterministicPerChunkAndDiffersBetweenChunks() {
    try (OffHeapBuffer a = OffHeapBuffer.allocate(1003);
         OffHeapBuffer b = OffHeapBuffer.allocate(1003)) {
      DataPattern.fill(a.address(), 1003, 42, 5);
      DataPattern.fill(b.address(), 1003, 42, 5);
      assertEquals(crc(a.view(0, 1003)), crc(b.view(0, 1003)));
      DataPattern.fill(b.address(), 1003, 42, 6);
      assertNotEquals(crc(a.view(0, 1003)), crc(b.view(0, 1003)));
      DataPattern.fill(b.address(), 1003, 43, 5);
      assertNotEquals(crc(a.view(0, 1003)), crc(b.view(0, 1003)));
    }
  }

  private static int crc(ByteBuffer b) {
    CRC32C c = new CRC32C();
    c.update(b);
    return (int) c.getValue();
  }
}
