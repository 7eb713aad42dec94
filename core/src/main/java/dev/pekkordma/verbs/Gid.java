package dev.pekkordma.verbs;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/** A 128-bit global identifier, printed like an IPv6 address as libibverbs' tools do. */
public final class Gid {
  public static final Gid ZERO = new Gid(new byte[16]);
  private final byte[] raw;

  private Gid(byte[] raw) {
    this.raw = raw;
  }

  public static Gid of(byte[] raw) {
    if (raw == null || raw.length != 16) {
      throw new IllegalArgumentException("a GID has 16 bytes, got "
          + (raw == null ? "null" : raw.length));
    }
    return new Gid(raw.clone());
  }

  /**
   * The GID of an IPv4 address as RoCEv2 and the kernel's CM make it, IPv4-mapped:
   * {@code ::ffff:a.b.c.d} (a multicast group's MGID too).
   */
  public static Gid ipv4Mapped(Inet4Address a) {
    byte[] mapped = new byte[16];
    mapped[10] = (byte) 0xff;
    mapped[11] = (byte) 0xff;
    System.arraycopy(a.getAddress(), 0, mapped, 12, 4);
    return new Gid(mapped);
  }

  /** A GID written as an IPv6 address, or an IPv4 one (taken {@link #ipv4Mapped}). */
  public static Gid parse(String text) {
    try {
      InetAddress a = InetAddress.getByName(text);
      return a instanceof Inet4Address v4 ? ipv4Mapped(v4) : new Gid(a.getAddress());
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not a GID: '" + text + "'", e);
    }
  }

  public byte[] toBytes() {
    return raw.clone();
  }

  public byte byteAt(int i) {
    return raw[i];
  }

  public boolean isZero() {
    for (byte b : raw) if (b != 0) return false;
    return true;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Gid && Arrays.equals(raw, ((Gid) o).raw);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(raw);
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < 16; i += 2) {
      if (i > 0) b.append(':');
      b.append(String.format("%02x%02x", raw[i] & 0xff, raw[i + 1] & 0xff));
    }
    return b.toString();
  }

  /** The GID as an IPv6 address (RoCE v2 GIDs are IP addresses). */
  public InetAddress toInetAddress() {
    try {
      return Inet6Address.getByAddress(null, raw, null);
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }
}
