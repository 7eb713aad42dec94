package dev.pekkordma.samples.interop;

import dev.pekkordma.memory.NativeMemory;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * What rping puts in a ping and how it advertises a buffer. Ping {@code n} of {@code size} bytes
 * is {@code "rdma-ping-<n>: "} followed by letters cycling from 'A' to 'z' (65..122), the first
 * letter one further along for each ping, and a NUL as its last byte. A buffer is advertised
 * with {@code struct rping_rdma_info}: address (64 bits), rkey and size (32 bits), big-endian.
 */
final class RpingData {
  /** rping's -S range: room for the prefix with the largest int, and less than 64 KiB. */
  static final int MIN_SIZE = 26;
  static final int MAX_SIZE = 65535;
  static final int DEFAULT_SIZE = 64;
  static final int INFO_SIZE = 16;

  private static final byte[] PREFIX = "rdma-ping-".getBytes(StandardCharsets.US_ASCII);
  private static final int FIRST = 65;
  private static final int LAST = 122;
  private static final boolean LITTLE = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  private RpingData() {}

  /** Writes ping {@code n}'s {@code size} bytes at {@code address}; allocates nothing. */
  static void fill(long address, int size, int n) {
    int cc = prefix(address, size, n);
    int c = first(n);
    for (int i = cc; i < size; i++) {
      NativeMemory.putByte(address + i, (byte) c);
      if (++c > LAST) c = FIRST;
    }
    NativeMemory.putByte(address + size - 1, (byte) 0);
  }

  /** The first offset where the {@code size} bytes at {@code address} differ from ping {@code n}, or -1. */
  static int firstMismatch(long address, int size, int n) {
    int i = 0;
    for (byte b : PREFIX) {
      if (NativeMemory.getByte(address + i) != b) return i;
      i++;
    }
    int digits = digits(n);
    for (int d = digits - 1; d >= 0; d--) {
      if (NativeMemory.getByte(address + i) != (byte) ('0' + digitAt(n, d))) return i;
      i++;
    }
    if (NativeMemory.getByte(address + i) != ':') return i;
    if (NativeMemory.getByte(address + i + 1) != ' ') return i + 1;
    i += 2;
    int c = first(n);
    for (; i < size - 1; i++) {
      if (NativeMemory.getByte(address + i) != (byte) c) return i;
      if (++c > LAST) c = FIRST;
    }
    return NativeMemory.getByte(address + size - 1) == 0 ? -1 : size - 1;
  }

  /** The letter ping {@code n} starts with: rping's {@code start}, one on per ping, wrapping. */
  static int first(int n) {
    return FIRST + n % (LAST - FIRST + 1);
  }

  private static int prefix(long address, int size, int n) {
    int i = 0;
    for (byte b : PREFIX) NativeMemory.putByte(address + i++, b);
    for (int d = digits(n) - 1; d >= 0; d--) NativeMemory.putByte(address + i++, (byte) ('0' + digitAt(n, d)));
    NativeMemory.putByte(address + i++, (byte) ':');
    NativeMemory.putByte(address + i++, (byte) ' ');
    return i;
  }

  private static int digits(int n) {
    int d = 1;
    while (n >= 10) {
      n /= 10;
      d++;
    }
    return d;
  }

  /** Decimal digit {@code d} of {@code n}, counting from the least significant. */
  private static int digitAt(int n, int d) {
    for (int i = 0; i < d; i++) n /= 10;
    return n % 10;
  }

  /** The C string at {@code address} (up to its NUL, at most {@code max} bytes), for -v. */
  static String text(long address, int max) {
    int len = 0;
    while (len < max && NativeMemory.getByte(address + len) != 0) len++;
    byte[] b = new byte[len];
    NativeMemory.copyToArray(address, b, 0, len);
    return new String(b, StandardCharsets.ISO_8859_1);
  }

  /** Length of the C string at {@code address}, at most {@code max}. */
  static int strlen(long address, int max) {
    int len = 0;
    while (len < max && NativeMemory.getByte(address + len) != 0) len++;
    return len;
  }

  static void putInfo(long address, long buf, int rkey, int size) {
    NativeMemory.putLong(address, be(buf));
    NativeMemory.putInt(address + 8, be(rkey));
    NativeMemory.putInt(address + 12, be(size));
  }

  static long infoAddress(long address) {
    return be(NativeMemory.getLong(address));
  }

  static int infoRkey(long address) {
    return be(NativeMemory.getInt(address + 8));
  }

  static int infoSize(long address) {
    return be(NativeMemory.getInt(address + 12));
  }

  // native memory is in the host's order; rping_rdma_info is big-endian (swapping is symmetric)
  private static long be(long v) {
    return LITTLE ? Long.reverseBytes(v) : v;
  }

  private static int be(int v) {
    return LITTLE ? Integer.reverseBytes(v) : v;
  }
}
