package dev.pekkordma.verbs.spi;

import dev.pekkordma.verbs.RdmaException;

/** The argument checks verbs make before a driver sees the call, each written once. */
public final class Checks {
  private Checks() {}

  /** {@code ibv_create_cq}'s size: at least one entry, at most the device's max_cqe. */
  public static void cqEntries(int cqe, int maxCqe) {
    if (cqe < 1 || cqe > maxCqe) {
      throw new RdmaException("ibv_create_cq", RdmaException.EINVAL,
          "cqe = " + cqe + " is outside [1, " + maxCqe + "] (max_cqe)");
    }
  }

  /** A CQ's completion channel must be one of the same device context's. */
  public static void sameContext(boolean same, String verb) {
    if (!same) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "the completion channel belongs to another device context");
    }
  }

  /**
   * Why a datagram of {@code bytes} cannot take a path of {@code mtu} bytes (a UD message is one
   * packet, and a device drops a longer one without an error), naming both sizes; null when it
   * fits or the MTU is unknown (0).
   */
  public static String overMtu(long bytes, int mtu) {
    return mtu > 0 && bytes > mtu
        ? "a datagram of " + bytes + " bytes is over the path MTU of " + mtu + " bytes"
        : null;
  }

  /** {@code ibv_reg_mr}'s memory: a real address, at least a byte, at most max_mr_size. */
  public static void registration(long address, long length, long maxMrSize) {
    if (address == 0) throw new RdmaException("ibv_reg_mr", RdmaException.EINVAL, "address is null");
    if (length <= 0 || length > maxMrSize) {
      throw new RdmaException("ibv_reg_mr", RdmaException.EINVAL, "length " + length
          + " is outside [1, " + maxMrSize + "] (max_mr_size)");
    }
  }
}
