package dev.pekkordma.cluster;

import java.nio.charset.StandardCharsets;

/**
 * Text another member chose (a rejection's reason, its endpoint's names), made fit for a log
 * line or an error: control characters escaped, so that it cannot forge lines, and cut short.
 */
final class Untrusted {
  static final int MAX = 160;

  private Untrusted() {}

  static String text(String s) {
    StringBuilder b = new StringBuilder(Math.min(s.length(), MAX) + 8);
    for (int i = 0; i < s.length() && b.length() < MAX; i++) {
      char c = s.charAt(i);
      if (Character.isISOControl(c) || Character.getType(c) == Character.FORMAT) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.length() < MAX || s.length() <= MAX ? b.toString() : b + "...";
  }

  static String text(byte[] utf8) {
    return text(new String(utf8 == null ? new byte[0] : utf8, StandardCharsets.UTF_8));
  }
}
