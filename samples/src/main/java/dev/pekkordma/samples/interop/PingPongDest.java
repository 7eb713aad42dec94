package dev.pekkordma.samples.interop;

import dev.pekkordma.verbs.Gid;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * One side's address as {@code ibv_rc_pingpong} exchanges it over TCP: the text {@code
 * "LLLL:QQQQQQ:PPPPPP:GGGG...G"} (LID, QP number and PSN in hex, the GID as 32 hex digits)
 * and a NUL, 52 bytes in all. rdma-core prints the GID as four byte-swapped 32-bit words, which
 * on a little-endian host (the only kind this runs on against it) is its 16 bytes in order.
 */
record PingPongDest(int lid, int qpn, int psn, Gid gid) {
  /** {@code sizeof "0000:000000:000000:00000000000000000000000000000000"}. */
  static final int MESSAGE_SIZE = 52;
  /** What the client sends after reading the server's address: {@code "done"} and its NUL. */
  static final byte[] DONE = {'d', 'o', 'n', 'e', 0};

  PingPongDest {
    if (lid < 0 || lid > 0xffff) throw new IllegalArgumentException("LID out of range: " + lid);
    if (qpn < 0 || qpn > 0xffffff) throw new IllegalArgumentException("QPN out of range: " + qpn);
    if (psn < 0 || psn > 0xffffff) throw new IllegalArgumentException("PSN out of range: " + psn);
  }

  byte[] encode() {
    StringBuilder b = new StringBuilder(MESSAGE_SIZE);
    b.append(String.format(Locale.ROOT, "%04x:%06x:%06x:", lid, qpn, psn));
    for (int i = 0; i < 16; i++) b.append(String.format(Locale.ROOT, "%02x", gid.byteAt(i) & 0xff));
    byte[] text = b.toString().getBytes(StandardCharsets.US_ASCII);
    byte[] msg = new byte[MESSAGE_SIZE];
    System.arraycopy(text, 0, msg, 0, text.length);
    return msg;
  }

  /** Parses a peer's message; a malformed one fails with what was wrong and the text. */
  static PingPongDest decode(byte[] msg) {
    int end = 0;
    while (end < msg.length && msg[end] != 0) end++;
    String text = new String(msg, 0, end, StandardCharsets.US_ASCII);
    String[] parts = text.split(":", -1);
    if (parts.length != 4) {
      throw new PingPongFailure("the peer's address '" + text + "' is not LID:QPN:PSN:GID");
    }
    int lid = hex(parts[0], "LID", 4, text);
    int qpn = hex(parts[1], "QPN", 6, text);
    int psn = hex(parts[2], "PSN", 6, text);
    String g = parts[3];
    if (g.length() != 32) {
      throw new PingPongFailure("the peer's GID '" + g + "' is not 32 hex digits (in '" + text
          + "')");
    }
    byte[] raw = new byte[16];
    for (int i = 0; i < 16; i++) {
      raw[i] = (byte) hex(g.substring(2 * i, 2 * i + 2), "GID", 2, text);
    }
    return new PingPongDest(lid, qpn, psn, Gid.of(raw));
  }

  private static int hex(String s, String what, int maxDigits, String text) {
    if (s.isEmpty() || s.length() > maxDigits) {
      throw new PingPongFailure("the peer's " + what + " '" + s + "' is not 1 to " + maxDigits
          + " hex digits (in '" + text + "')");
    }
    try {
      return Integer.parseInt(s, 16);
    } catch (NumberFormatException e) {
      throw new PingPongFailure("the peer's " + what + " '" + s + "' is not hex (in '" + text
          + "')");
    }
  }

  /** rc_pingpong routes by GID (a GRH) when the GID's interface id, its low 8 bytes, is set. */
  boolean global() {
    for (int i = 8; i < 16; i++) if (gid.byteAt(i) != 0) return true;
    return false;
  }

  /** rc_pingpong's line: {@code LID 0x0000, QPN 0x000011, PSN 0x1a2b3c, GID ::ffff:127.0.0.1}. */
  String describe() {
    return String.format(Locale.ROOT, "LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", lid, qpn, psn,
        ipv6Text(gid));
  }

  /** The GID as inet_ntop writes an IPv6 address: zeros compressed, embedded IPv4 dotted. */
  static String ipv6Text(Gid gid) {
    int[] w = new int[8];
    for (int i = 0; i < 8; i++) w[i] = ((gid.byteAt(2 * i) & 0xff) << 8) | (gid.byteAt(2 * i + 1) & 0xff);
    // the longest run of two or more zero words, the first of equals
    int bestStart = -1;
    int bestLen = 0;
    for (int i = 0; i < 8; ) {
      if (w[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && w[j] == 0) j++;
      if (j - i > bestLen && j - i >= 2) {
        bestStart = i;
        bestLen = j - i;
      }
      i = j;
    }
    boolean v4 = bestStart == 0 && (bestLen == 6 || (bestLen == 5 && w[5] == 0xffff));
    StringBuilder b = new StringBuilder();
    int words = v4 ? 6 : 8;
    for (int i = 0; i < words; i++) {
      if (i == bestStart) {
        b.append(i == 0 ? "::" : ":");
        i += bestLen - 1;
        continue;
      }
      b.append(Integer.toHexString(w[i]));
      if (i + 1 < words || v4) b.append(':');
    }
    if (v4) {
      b.append(gid.byteAt(12) & 0xff).append('.').append(gid.byteAt(13) & 0xff).append('.')
          .append(gid.byteAt(14) & 0xff).append('.').append(gid.byteAt(15) & 0xff);
    }
    return b.toString();
  }
}
