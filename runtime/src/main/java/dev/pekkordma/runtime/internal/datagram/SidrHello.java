package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
/**
 * What an endpoint says of itself in the private data of its SIDR request and reply: the QP its
 * datagrams come from, and the port it listens on. The SIDR reply's QP number is that of the QP
 * made for the request, not the one the peer's datagrams come from; with this the receiver
 * names the address of a datagram's sender. Big-endian: magic "DG" (2), version 1 (1), unused
 * (1), QPN (4), port (2). Anything else (a peer that is not an endpoint, padding aside) says
 * nothing, and its datagrams come without an address.
 */
@InternalApi
public record SidrHello(int qpn, int port) {
  public static final int BYTES = 10;
  private static final int MAGIC = 0x4447;

  public byte[] encode() {
    byte[] b = new byte[BYTES];
    b[0] = (byte) (MAGIC >>> 8);
    b[1] = (byte) MAGIC;
    b[2] = 1;
    b[4] = (byte) (qpn >>> 24);
    b[5] = (byte) (qpn >>> 16);
    b[6] = (byte) (qpn >>> 8);
    b[7] = (byte) qpn;
    b[8] = (byte) (port >>> 8);
    b[9] = (byte) port;
    return b;
  }

  /** The hello in {@code b}, or null; the IB CM pads private data with zeros, so more may follow. */
  public static SidrHello parse(byte[] b) {
    if (b == null || b.length < BYTES) return null;
    if ((((b[0] & 0xff) << 8) | (b[1] & 0xff)) != MAGIC || b[2] != 1) return null;
    int qpn = ((b[4] & 0xff) << 24) | ((b[5] & 0xff) << 16) | ((b[6] & 0xff) << 8) | (b[7] & 0xff);
    int port = ((b[8] & 0xff) << 8) | (b[9] & 0xff);
    if (qpn <= 0 || qpn > 0xffffff || port == 0) return null;
    return new SidrHello(qpn, port);
  }
}
