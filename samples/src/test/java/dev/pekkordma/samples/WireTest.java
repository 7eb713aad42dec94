package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.ConnectionParameters;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class WireTest {
  @Test
  void helloFitsAConnectRequestAndRoundTrips() {
    Wire.Hello h = new Wire.Hello(TransferMode.SEND, 3L << 30, 1 << 20, 16, -5);
    byte[] data = h.encode();
    assertTrue(data.length <= ConnectionParameters.MAX_CONNECT_PRIVATE_DATA);
    // librdmacm may pad private data with zeros
    assertEquals(h, Wire.Hello.decode(Arrays.copyOf(data, 56)));
    assertEquals(3072, h.chunks());
    assertEquals(1 << 20, h.chunkLength(3071));
  }

  @Test
  void lastChunkIsShort() {
    Wire.Hello h = new Wire.Hello(TransferMode.WRITE, 10_000, 4096, 4, 1);
    assertEquals(3, h.chunks());
    assertEquals(4096, h.chunkLength(1));
    assertEquals(10_000 - 8192, h.chunkLength(2));
  }

  @Test
  void ringInfoFitsAnAcceptAndRoundTrips() {
    Wire.RingInfo r = new Wire.RingInfo(0x7f00_1234_5000L, 0xabcdef01, 16, 1 << 20);
    byte[] data = r.encode();
    assertTrue(data.length <= ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA);
    assertEquals(r, Wire.RingInfo.decode(Arrays.copyOf(data, 196)));
  }

  @Test
  void garbageIsRefusedWithAReason() {
    Wire.ProtocolException e = assertThrows(Wire.ProtocolException.class,
        () -> Wire.Hello.decode(new byte[56]));
    assertTrue(e.getMessage().contains("magic"), e.getMessage());
    assertThrows(Wire.ProtocolException.class, () -> Wire.RingInfo.decode(new byte[3]));
  }

  @Test
  void rejectReasonRoundTripsAndIsTruncatedToFit() {
    assertEquals("too big", Wire.decodeReject(Wire.encodeReject("too big")));
    byte[] long_ = Wire.encodeReject("x".repeat(500));
    assertTrue(long_.length <= ConnectionParameters.MAX_REJECT_PRIVATE_DATA);
    assertNull(Wire.decodeReject(new byte[10]));
  }

  @Test
  void finAndVerdictRoundTrip() {
    ByteBuffer b = ByteBuffer.allocateDirect(Wire.CONTROL_SIZE);
    new Wire.Fin(1L << 30, 1024, 0x1234abcd).encode(b);
    assertEquals(new Wire.Fin(1L << 30, 1024, 0x1234abcd), Wire.Fin.decode(b, Wire.Fin.LENGTH));
    new Wire.Verdict(false, 99, 3, -1).encode(b);
    assertEquals(new Wire.Verdict(false, 99, 3, -1), Wire.Verdict.decode(b, Wire.Verdict.LENGTH));
  }
}
