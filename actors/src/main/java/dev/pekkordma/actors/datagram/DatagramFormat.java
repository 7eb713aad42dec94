package dev.pekkordma.actors.datagram;

import dev.pekkordma.verbs.WorkCompletions;

/**
 * A UD receive's layout: the 40 bytes the GRH takes (whether or not one came), then the data.
 * A completion's byte length counts both. Lengths come from the device but describe what a peer
 * sent, so they are checked against the buffer before anything is read or copied.
 */
final class DatagramFormat {
  static final int GRH_BYTES = 40;
  /** The GRH's source GID: bytes 8 to 23. */
  static final int SGID_OFFSET = 8;

  private DatagramFormat() {}

  /**
   * The data's length in a receive of {@code byteLength} bytes into a buffer of {@code capacity}
   * bytes, or a {@link MalformedDatagramException} naming what does not fit.
   */
  static int dataLength(int byteLength, int capacity) {
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

  /** Whether the receive's GRH was filled in (the sender used a global route). */
  static boolean hasGrh(int wcFlags) {
    return (wcFlags & WorkCompletions.FLAG_GRH) != 0;
  }

  /** A completion that does not describe a datagram this buffer could hold. */
  static final class MalformedDatagramException extends RuntimeException {
    MalformedDatagramException(String message) {
      super(message);
    }
  }
}
