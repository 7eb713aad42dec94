package dev.pekkordma.runtime.internal.datagram;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.runtime.internal.datagram.DatagramFormat.MalformedDatagramException;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.WorkCompletions;
import java.nio.ByteBuffer;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.Size;

/**
 * A UD receive's lengths and GRH come from the device but describe what a peer sent: whatever
 * they are, reading them gives a length that fits the buffer or a named {@link
 * MalformedDatagramException}, and nothing else.
 */
class DatagramFormatPropertyTest {

  @Property(tries = 2000)
  void anyLengthFitsTheBufferOrIsNamed(@ForAll int byteLength, @ForAll int capacity) {
    try {
      int length = DatagramFormat.dataLength(byteLength, capacity);
      assertTrue(length >= 0 && length + DatagramFormat.GRH_BYTES <= capacity,
          length + " of " + capacity);
      assertEquals(byteLength - DatagramFormat.GRH_BYTES, length);
    } catch (MalformedDatagramException e) {
      assertTrue(e.getMessage().contains(String.valueOf(byteLength))
          || e.getMessage().contains(String.valueOf(capacity)), e.getMessage());
    }
  }

  @Property(tries = 2000)
  void anyGrhPlaceReadsWithinTheBufferOrIsNamed(@ForAll @Size(max = 200) byte[] slot,
      @ForAll int at, @ForAll int flags) {
    long[] gid = new long[2];
    try {
      DatagramFormat.sourceGid(ByteBuffer.wrap(slot), at, flags, gid);
      assertTrue(at >= 0 && at + DatagramFormat.GRH_BYTES <= slot.length, at + " in "
          + slot.length);
    } catch (MalformedDatagramException e) {
      assertTrue(e.getMessage().contains("does not fit"), e.getMessage());
    }
  }

  @Property(tries = 500)
  void theSourceGidIsBytes8To23OfTheGrh(@ForAll @Size(value = 40) byte[] grh) {
    grh[0] = 0x60; // an InfiniBand (IPv6-shaped) GRH: version 6
    long[] halves = new long[2];
    DatagramFormat.sourceGid(ByteBuffer.wrap(grh), 0, WorkCompletions.FLAG_GRH, halves);
    Gid expected = Gid.of(Arrays.copyOfRange(grh, 8, 24));
    assertEquals(expected, DatagramFormat.gid(halves[0], halves[1]));
    assertArrayEquals(expected.toBytes(), DatagramFormat.gid(halves[0], halves[1]).toBytes());
  }

  /**
   * RoCE v2 over IPv4: the GRH area is 20 zero bytes, then the IPv4 header; the sender's GID is
   * its source address, IPv4-mapped, as the CM's address vectors name it.
   */
  @Property(tries = 500)
  void aRoceV2Ipv4HeaderGivesTheSourceAddressMapped(@ForAll @Size(value = 20) byte[] header) {
    byte[] grh = new byte[40];
    System.arraycopy(header, 0, grh, 20, 20);
    grh[20] = 0x45;
    long[] halves = new long[2];
    DatagramFormat.sourceGid(ByteBuffer.wrap(grh), 0, WorkCompletions.FLAG_GRH, halves);
    byte[] mapped = new byte[16];
    mapped[10] = (byte) 0xff;
    mapped[11] = (byte) 0xff;
    System.arraycopy(grh, 32, mapped, 12, 4);
    assertEquals(Gid.of(mapped), DatagramFormat.gid(halves[0], halves[1]));
  }

  @Property(tries = 200)
  void withoutTheGrhFlagTheGidIsZero(@ForAll @Size(value = 40) byte[] grh) {
    long[] halves = {1, 1};
    DatagramFormat.sourceGid(ByteBuffer.wrap(grh), 0, 0, halves);
    assertTrue(DatagramFormat.gid(halves[0], halves[1]).isZero());
  }
}
