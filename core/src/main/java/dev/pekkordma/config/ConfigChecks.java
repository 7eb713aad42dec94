package dev.pekkordma.config;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.UnrecoverableKeyException;
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

  /** A TCP or UDP port number, 0 (any) to 65535. */
  public static int port(Config c, String path) {
    int v = c.getInt(path);
    if (v < 0 || v > 65535) {
      throw new ConfigException.BadValue(path, "must be in [0, 65535], was " + v);
    }
    return v;
  }

  public static int atLeast(Config c, String path, int min) {
    int v = c.getInt(path);
    if (v < min) throw new ConfigException.BadValue(path, "must be at least " + min + ", was " + v);
    return v;
  }

  /**
   * The backoff under {@code path}: {@code min-backoff}, {@code max-backoff} (at least min) and
   * {@code random-factor} (in [0, 1]).
   */
  public static Backoff backoff(Config c, String path) {
    Duration min = positive(c, path + ".min-backoff");
    Duration max = positive(c, path + ".max-backoff");
    if (max.compareTo(min) < 0) {
      throw new ConfigException.BadValue(path + ".max-backoff",
          "must be at least min-backoff (" + min + "), was " + max);
    }
    double rf = c.getDouble(path + ".random-factor");
    if (!(rf >= 0 && rf <= 1)) {
      throw new ConfigException.BadValue(path + ".random-factor", "must be in [0, 1], was " + rf);
    }
    return new Backoff(min, max, rf);
  }

  /**
   * Loads the key store file named at {@code path} (the JDK's default type) with the password at
   * {@code passwordPath}; a missing, unreadable or unopenable file fails naming the setting and
   * the file, a wrong password naming the password's setting.
   */
  public static KeyStore keyStore(Config c, String path, String passwordPath) {
    String name = c.getString(path);
    char[] password = c.getString(passwordPath).toCharArray();
    if (name.isBlank()) throw new ConfigException.BadValue(path, "must name a key store file");
    Path file = Paths.get(name).toAbsolutePath();
    if (!Files.isRegularFile(file)) {
      throw new ConfigException.BadValue(path, "no such file: " + file);
    }
    if (!Files.isReadable(file)) throw new ConfigException.BadValue(path, "cannot read " + file);
    try (InputStream in = Files.newInputStream(file)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(in, password);
      return store;
    } catch (IOException e) {
      if (e.getCause() instanceof UnrecoverableKeyException) {
        throw new ConfigException.BadValue(passwordPath, "does not open " + file + " ("
            + e.getMessage() + ")");
      }
      throw new ConfigException.BadValue(path, "cannot read " + file + " as a "
          + KeyStore.getDefaultType() + " key store: " + e.getMessage());
    } catch (GeneralSecurityException e) {
      throw new ConfigException.BadValue(path, "cannot read " + file + " as a "
          + KeyStore.getDefaultType() + " key store: " + e);
    }
  }
}
