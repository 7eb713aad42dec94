package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.WorkCompletions;
import java.nio.ByteBuffer;

/**
 * A UD receive's layout: the 40 bytes the GRH takes (filled in when the sender used a global
 * route, which the completion's GRH flag says), then the data; the completion's byte length
 * counts both. The length describes what a peer sent, so it is checked against the buffer
 * before anything is read or copied: anything that does not fit is a {@link
 * MalformedDatagramException} naming the sizes, and nothing else is thrown.
 */
@InternalApi
public final class DatagramFormat {
  public static final int GRH_BYTES = 40;
  /** The GRH's source GID: bytes 8 to 23 (on RoCE v2 over IPv4, see {@link #sourceGid}). */
  public static final int SGID_OFFSET = 8;

  private DatagramFormat() {}

  /**
   * The data's length in a receive of {@code byteLength} bytes into a buffer of {@code
   * capacity} bytes (the GRH's 40 and the data), or a {@link MalformedDatagramException}.
   */
  public static int dataLength(int byteLength, int capacity) {
    if (capacity < GRH_BYTES) {
      throw new MalformedDatagramException("a receive buffer of " + capacity
          + " bytes cannot hold the " + GRH_BYTES + "-byte GRH");
    }
    if (byteLength < GRH_BYTES) {
      throw new MalformedDatagramException("a datagram receive of " + byteLength
          + " bytes is shorter than the " + GRH_BYTES + "-byte GRH area");
    }
    if (byteLength > capacity) {
      throw new MalformedDatagramException("a datagram receive of " + byteLength
          + " bytes is longer than its buffer of " + capacity + " bytes");
    }
    return byteLength - GRH_BYTES;
  }

  /**
   * The source GID's first and last eight bytes (big-endian) from the GRH at {@code at} of
   * {@code slot}, into {@code into[0..1]}; zeros when the completion says no GRH came. Checks
   * that the slot holds a GRH there first.
   */
  public static void sourceGid(ByteBuffer slot, int at, int wcFlags, long[] into) {
    if (at < 0 || at > slot.capacity() - GRH_BYTES) {
      throw new MalformedDatagramException("a GRH at " + at + " does not fit a buffer of "
          + slot.capacity() + " bytes");
    }
    if ((wcFlags & WorkCompletions.FLAG_GRH) == 0) {
      into[0] = 0;
      into[1] = 0;
      return;
    }
    if (roceV2Ipv4(slot, at)) { // the sender's GID is its IPv4 address, mapped
      into[0] = 0;
      into[1] = 0xFFFFL << 32 | (slot.getInt(at + IPV4_SOURCE_OFFSET) & 0xFFFFFFFFL);
      return;
    }
    into[0] = slot.getLong(at + SGID_OFFSET);
    into[1] = slot.getLong(at + SGID_OFFSET + 8);
  }

  /** Where a RoCE v2 IPv4 receive's header starts in the GRH area, and its source address. */
  static final int IPV4_HEADER_OFFSET = 20;
  static final int IPV4_SOURCE_OFFSET = IPV4_HEADER_OFFSET + 12;

  /**
   * Whether the GRH area holds a RoCE v2 packet's IPv4 header (its last 20 bytes, version 4 and
   * a 20-byte header, after 20 zeros) rather than an InfiniBand or IPv6 GRH (version 6 first).
   */
  private static boolean roceV2Ipv4(ByteBuffer slot, int at) {
    for (int i = 0; i < IPV4_HEADER_OFFSET; i += 4) {
      if (slot.getInt(at + i) != 0) return false;
    }
    return slot.get(at + IPV4_HEADER_OFFSET) == 0x45;
  }

  /** The GID whose first and last eight bytes (big-endian) are {@code hi} and {@code lo}. */
  public static Gid gid(long hi, long lo) {
    byte[] b = new byte[16];
    for (int k = 0; k < 8; k++) {
      b[7 - k] = (byte) (hi >>> 8 * k);
      b[15 - k] = (byte) (lo >>> 8 * k);
    }
    return Gid.of(b);
  }

  /** A receive that does not describe a datagram its buffer could hold. */
  public static final class MalformedDatagramException extends RuntimeException {
    public MalformedDatagramException(String message) {
      super(message);
    }
  }
}
