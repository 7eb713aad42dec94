package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ByteSizeTest {
  @Test
  void parsesBinarySuffixes() {
    assertEquals(1L << 30, ByteSize.parse("1g"));
    assertEquals(512L << 20, ByteSize.parse("512m"));
    assertEquals(64L << 10, ByteSize.parse("64k"));
    assertEquals(4L << 30, ByteSize.parse("4g"));
    assertEquals(4L << 30, ByteSize.parse("4G"));
    assertEquals(1L << 30, ByteSize.parse("1GiB"));
    assertEquals(2L << 20, ByteSize.parse("2MB"));
    assertEquals(4096, ByteSize.parse("4096"));
    assertEquals(1L << 40, ByteSize.parse("1t"));
  }

  @Test
  void rejectsZeroNegativeAndGarbage() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("0"))
        .getMessage().contains("zero"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("0k"))
        .getMessage().contains("zero"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("-1m"))
        .getMessage().contains("negative"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("12q"))
        .getMessage().contains("not a size"));
    assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(""));
    assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("g"));
    assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("1.5g"));
    assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("99999999999999999999"));
    assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("9999999999t"));
  }

  @Test
  void formats() {
    assertEquals("1 GiB", ByteSize.format(1L << 30));
    assertEquals("1.5 KiB", ByteSize.format(1536));
    assertEquals("100 B", ByteSize.format(100));
    assertEquals("64 KiB", ByteSize.format(65536));
  }
}
