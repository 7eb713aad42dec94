package dev.pekkordma.samples;

import java.util.Locale;
import picocli.CommandLine;

/**
 * Byte counts as people type them: {@code 4096}, {@code 64k}, {@code 512m}, {@code 1g}, {@code
 * 4G}, {@code 1GiB}, {@code 2MB}. Suffixes are binary (k = 1024); a trailing {@code b}, {@code
 * ib} or {@code iB} is allowed. Zero, negative and unparsable values are rejected.
 */
public final class ByteSize {
  private ByteSize() {}

  /** Parses a positive size; the message says what was wrong and what is accepted. */
  public static long parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty size; use a number with an optional k, m, g or t"
          + " suffix, e.g. 64k, 512m, 1g");
    }
    String t = text.trim().toLowerCase(Locale.ROOT);
    if (t.startsWith("-")) {
      throw new IllegalArgumentException("'" + text + "' is negative; a size must be positive");
    }
    if (t.endsWith("ib")) {
      t = t.substring(0, t.length() - 2);
    } else if (t.endsWith("b")) {
      t = t.substring(0, t.length() - 1);
    }
    int shift = 0;
    if (!t.isEmpty()) {
      switch (t.charAt(t.length() - 1)) {
        case 'k': shift = 10; break;
        case 'm': shift = 20; break;
        case 'g': shift = 30; break;
        case 't': shift = 40; break;
        default: shift = 0;
      }
    }
    if (shift != 0) t = t.substring(0, t.length() - 1);
    if (t.isEmpty() || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new IllegalArgumentException("'" + text + "' is not a size; use a number with an"
          + " optional k, m, g or t suffix (powers of 1024), e.g. 64k, 512m, 1g");
    }
    long n;
    try {
      n = Long.parseLong(t);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + text + "' is too large", e);
    }
    if (n == 0) throw new IllegalArgumentException("'" + text + "' is zero; a size must be positive");
    if (n > (Long.MAX_VALUE >> shift)) throw new IllegalArgumentException("'" + text + "' is too large");
    return n << shift;
  }

  /** {@code 1073741824 -> "1 GiB"}, {@code 1536 -> "1.5 KiB"}, {@code 100 -> "100 B"}. */
  public static String format(long bytes) {
    String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = bytes;
    int u = 0;
    while (Math.abs(v) >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    if (u == 0) return bytes + " B";
    String s = String.format(Locale.ROOT, "%.2f", v);
    if (s.contains(".")) s = s.replaceAll("0+$", "").replaceAll("\\.$", "");
    return s + " " + units[u];
  }

  /** The picocli converter: a bad value becomes "Invalid value for option '--size': ...". */
  public static final class Converter implements CommandLine.ITypeConverter<Long> {
    @Override
    public Long convert(String value) {
      try {
        return parse(value);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException(e.getMessage());
      }
    }
  }
}
