package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.ConnectionParameters;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class BulkWireTest {
  @Test
  void helloFitsAConnectRequestAndRoundTrips() {
    BulkWire.TransferPlan h =
        new BulkWire.TransferPlan(TransferMode.SEND, 3L << 30, 1 << 20, 16, -5);
    byte[] data = h.encode();
    assertTrue(data.length <= ConnectionParameters.MAX_CONNECT_PRIVATE_DATA);
    // librdmacm may pad private data with zeros
    assertEquals(h, BulkWire.TransferPlan.decode(Arrays.copyOf(data, 56)));
    assertEquals(3072, h.chunks());
    assertEquals(1 << 20, h.chunkLength(3071));
  }

  @Test
  void lastChunkIsShort() {
    BulkWire.TransferPlan h = new BulkWire.TransferPlan(TransferMode.WRITE, 10_000, 4096, 4, 1);
    assertEquals(3, h.chunks());
    assertEquals(4096, h.chunkLength(1));
    assertEquals(10_000 - 8192, h.chunkLength(2));
  }

  @Test
  void ringInfoFitsAnAcceptAndRoundTrips() {
    BulkWire.RingInfo r = new BulkWire.RingInfo(0x7f00_1234_5000L, 0xabcdef01, 16, 1 << 20);
    byte[] data = r.encode();
    assertTrue(data.length <= ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA);
    assertEquals(r, BulkWire.RingInfo.decode(Arrays.copyOf(data, 196)));
  }

  @Test
  void garbageIsRefusedWithAReason() {
    BulkWire.ProtocolException e = assertThrows(BulkWire.ProtocolException.class,
        () -> BulkWire.TransferPlan.decode(new byte[56]));
    assertTrue(e.getMessage().contains("magic"), e.getMessage());
    assertThrows(BulkWire.ProtocolException.class, () -> BulkWire.RingInfo.decode(new byte[3]));
  }

  @Test
  void rejectReasonRoundTripsAndIsTruncatedToFit() {
    assertEquals("too big", BulkWire.decodeReject(BulkWire.encodeReject("too big")));
    byte[] long_ = BulkWire.encodeReject("x".repeat(500));
    assertTrue(long_.length <= ConnectionParameters.MAX_REJECT_PRIVATE_DATA);
    assertNull(BulkWire.decodeReject(new byte[10]));
  }

  @Test
  void finAndVerdictRoundTrip() {
    ByteBuffer b = ByteBuffer.allocateDirect(BulkWire.CONTROL_SIZE);
    new BulkWire.Fin(1L << 30, 1024, 0x1234abcd).encode(b);
    assertEquals(new BulkWire.Fin(1L << 30, 1024, 0x1234abcd),
        BulkWire.Fin.decode(b, BulkWire.Fin.LENGTH));
    new BulkWire.Verdict(false, 99, 3, -1).encode(b);
    assertEquals(new BulkWire.Verdict(false, 99, 3, -1),
        BulkWire.Verdict.decode(b, BulkWire.Verdict.LENGTH));
  }
}
