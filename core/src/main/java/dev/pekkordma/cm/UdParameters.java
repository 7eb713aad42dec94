package dev.pekkordma.cm;

import dev.pekkordma.verbs.AddressVector;

/**
 * What a datagram id's events carry ({@code rdma_ud_param}): on ESTABLISHED, the peer's QP number
 * and Q_Key and the address vector to reach it (make an address handle of it on the id's PD); on
 * MULTICAST_JOIN, the group's ({@link #MULTICAST_QPN}); on a UDP CONNECT_REQUEST, the requester's
 * address. {@code privateData} is what the peer's connect or accept carried.
 */
public record UdParameters(byte[] privateData, AddressVector addressVector, int qpNum,
    int qkey) {

  /** The QP number sends to a multicast group go to. */
  public static final int MULTICAST_QPN = 0xFFFFFF;

  /** The Q_Key of RDMA_PS_UDP ids' QPs and groups ({@code RDMA_UDP_QKEY}). */
  public static final int UDP_QKEY = 0x01234567;

  public byte[] privateDataOrEmpty() {
    return privateData == null ? new byte[0] : privateData;
  }
}
