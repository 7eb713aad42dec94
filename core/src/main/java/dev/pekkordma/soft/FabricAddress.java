package dev.pekkordma.soft;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/** Where a process's fabric answers: an IPv4 address and a port, as its devices' GIDs say. */
final class FabricAddress {
  /** No address: 0.0.0.0:0, where a handshake message names none. */
  static final FabricAddress NONE = new FabricAddress(new byte[4], 0);

  private final byte[] ip;
  private final int port;

  FabricAddress(byte[] ip, int port) {
    if (ip.length != 4) throw new IllegalArgumentException("an IPv4 address has 4 bytes");
    if (port < 0 || port > 0xffff) throw new IllegalArgumentException("port " + port);
    this.ip = ip.clone();
    this.port = port;
  }

  byte[] ip() {
    return ip.clone();
  }

  int port() {
    return port;
  }

  /** The address as Java names it (IPv4: no lookup). */
  InetAddress inetAddress() {
    try {
      return InetAddress.getByAddress(ip);
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e); // four bytes are always an address
    }
  }

  InetSocketAddress socketAddress() {
    return new InetSocketAddress(inetAddress(), port);
  }

  /** A device's GID: fe80::, this address and port, the device's serial. */
  byte[] gid(int serial) {
    byte[] g = new byte[16];
    writeGid(g, serial);
    return g;
  }

  void writeGid(byte[] g, int serial) {
    java.util.Arrays.fill(g, 0, 8, (byte) 0);
    g[0] = (byte) 0xfe;
    g[1] = (byte) 0x80;
    System.arraycopy(ip, 0, g, 8, 4);
    g[12] = (byte) (port >>> 8);
    g[13] = (byte) port;
    g[14] = (byte) (serial >>> 8);
    g[15] = (byte) serial;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FabricAddress && port == ((FabricAddress) o).port
        && Arrays.equals(ip, ((FabricAddress) o).ip);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(ip) * 31 + port;
  }

  @Override
  public String toString() {
    return (ip[0] & 0xff) + "." + (ip[1] & 0xff) + "." + (ip[2] & 0xff) + "." + (ip[3] & 0xff)
        + ":" + port;
  }
}
