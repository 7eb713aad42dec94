package dev.pekkordma.verbs;

/**
 * Where a connected QP's peer is, or where a UD datagram goes ({@code ibv_ah_attr}). On Ethernet
 * link layers (RoCE) {@code global} must be true and {@code dgid} set.
 */
public record AddressVector(
    int dlid, int serviceLevel, int portNum, boolean global, Gid dgid, int sgidIndex,
    int hopLimit, int trafficClass, int flowLabel) {

  /** A global (GRH) route to {@code dgid} through local port {@code portNum}. */
  public static AddressVector global(Gid dgid, int sgidIndex, int portNum) {
    return new AddressVector(0, 0, portNum, true, dgid, sgidIndex, 64, 0, 0);
  }

  /** A route by LID only (InfiniBand link layer). */
  public static AddressVector local(int dlid, int portNum) {
    return new AddressVector(dlid, 0, portNum, false, Gid.ZERO, 0, 0, 0, 0);
  }
}
