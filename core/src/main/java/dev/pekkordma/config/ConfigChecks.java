package dev.pekkordma.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.time.Duration;

/** Reads a setting and fails at start, naming its key, when its value makes no sense. */
public final class ConfigChecks {
  private ConfigChecks() {}

  public static Duration positive(Config c, String path) {
    Duration d = c.getDuration(path);
    if (d.isNegative() || d.isZero()) {
      throw new ConfigException.BadValue(path, "must be positive, was " + d);
    }
    return d;
  }

  public static int atLeast(Config c, String path, int min) {
    int v = c.getInt(path);
    if (v < min) throw new ConfigException.BadValue(path, "must be at least " + min + ", was " + v);
    return v;
  }
}
