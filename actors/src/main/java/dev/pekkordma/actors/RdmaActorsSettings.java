package dev.pekkordma.actors;

import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The actors' settings under {@code pekko-rdma.actors}, checked when read: a wrong value fails
 * with a {@link ConfigException} naming its full path.
 */
public final class RdmaActorsSettings {
  public static final String ROOT = "pekko-rdma.actors";
  private static final Duration LONGEST_BLOCK = Duration.ofSeconds(10);

  /** Exponential backoff: min, doubling up to max, each delay varied by up to randomFactor. */
  public record Backoff(Duration min, Duration max, double randomFactor) {
    /** The delay before attempt {@code attempt} (1 for the first retry). */
    public Duration delay(int attempt) {
      double base = min.toNanos() * Math.pow(2, Math.max(0, Math.min(attempt - 1, 30)));
      double capped = Math.min(base, max.toNanos());
      double jitter = 1 + randomFactor * ThreadLocalRandom.current().nextDouble();
      return Duration.ofNanos((long) Math.min(capped * jitter, Long.MAX_VALUE / 2.0));
    }
  }

  public final List<String> devices;
  public final String pollerDispatcher;
  public final int maxSpins;
  public final int maxYields;
  public final Duration blockTimeout;
  public final int batchSize;
  public final Backoff reopenBackoff;
  public final int cqSize;
  public final Backoff qpRestartBackoff;
  public final int bufferSize;
  public final int slabSize;
  public final int slabs;
  public final Duration resolveAddressTimeout;
  public final Duration resolveRouteTimeout;
  public final Duration connectTimeout;
  public final Duration acceptTimeout;
  public final Duration disconnectTimeout;
  public final Duration cmDeviceIdleTimeout;
  public final int backlog;
  public final Backoff connectRetry;
  public final int maxConnectAttempts;

  private RdmaActorsSettings(Config c) {
    String p = ROOT + ".";
    devices = c.getStringList(p + "devices");
    if (devices.stream().distinct().count() != devices.size()) {
      throw new ConfigException.BadValue(p + "devices", "names repeat: " + devices);
    }
    pollerDispatcher = c.getString(p + "poller-dispatcher");
    checkDispatcher(c, p + "poller-dispatcher", pollerDispatcher);
    maxSpins = atLeast(c, p + "poller.max-spins", 0);
    maxYields = atLeast(c, p + "poller.max-yields", 0);
    blockTimeout = positive(c, p + "poller.block-timeout");
    if (blockTimeout.compareTo(LONGEST_BLOCK) > 0) {
      throw new ConfigException.BadValue(p + "poller.block-timeout", "must be at most "
          + LONGEST_BLOCK + " (a poller answers a stop only between blocks), was " + blockTimeout);
    }
    batchSize = atLeast(c, p + "poller.batch-size", 1);
    reopenBackoff = backoff(c, p + "device.reopen-backoff");
    cqSize = atLeast(c, p + "qp.cq-size", 1);
    qpRestartBackoff = backoff(c, p + "qp.restart-backoff");
    long buffer = c.getBytes(p + "buffer-pool.buffer-size");
    long slab = c.getBytes(p + "buffer-pool.slab-size");
    if (buffer < 64 || buffer > Integer.MAX_VALUE) {
      throw new ConfigException.BadValue(p + "buffer-pool.buffer-size",
          "must be in [64 B, 2 GiB), was " + buffer);
    }
    if (slab < buffer || slab > Integer.MAX_VALUE || slab % buffer != 0) {
      throw new ConfigException.BadValue(p + "buffer-pool.slab-size",
          "must be a multiple of buffer-size (" + buffer + ") below 2 GiB, was " + slab);
    }
    bufferSize = (int) buffer;
    slabSize = (int) slab;
    slabs = atLeast(c, p + "buffer-pool.slabs", 1);
    resolveAddressTimeout = positive(c, p + "cm.resolve-address-timeout");
    resolveRouteTimeout = positive(c, p + "cm.resolve-route-timeout");
    connectTimeout = positive(c, p + "cm.connect-timeout");
    if (c.hasPath("pekko-rdma.cm.connect-timeout")) {
      Duration provider = c.getDuration("pekko-rdma.cm.connect-timeout");
      if (connectTimeout.compareTo(provider) <= 0) {
        throw new ConfigException.BadValue(p + "cm.connect-timeout", "must be longer than "
            + "pekko-rdma.cm.connect-timeout (" + provider + "), so that the provider's own "
            + "UNREACHABLE comes first; was " + connectTimeout);
      }
    }
    acceptTimeout = positive(c, p + "cm.accept-timeout");
    disconnectTimeout = positive(c, p + "cm.disconnect-timeout");
    cmDeviceIdleTimeout = positive(c, p + "cm.device-idle-timeout");
    backlog = atLeast(c, p + "cm.backlog", 1);
    connectRetry = backoff(c, p + "cm.retry");
    maxConnectAttempts = atLeast(c, p + "cm.retry.max-attempts", 1);
  }

  /** Reads and checks {@code pekko-rdma.actors} from a full config (an actor system's). */
  public static RdmaActorsSettings from(Config config) {
    return new RdmaActorsSettings(config);
  }

  private static void checkDispatcher(Config c, String key, String path) {
    if (path.isEmpty() || !c.hasPath(path) || !c.hasPath(path + ".type")) {
      throw new ConfigException.BadValue(key, "'" + path + "' names no dispatcher configuration");
    }
    String type = c.getString(path + ".type");
    if (!type.equals("PinnedDispatcher")) {
      throw new ConfigException.BadValue(key, "'" + path + "' is a " + type
          + "; pollers block their thread, so it must be a PinnedDispatcher");
    }
    String timeout = path + ".thread-pool-executor.allow-core-timeout";
    if (c.hasPath(timeout) && c.getBoolean(timeout)) {
      throw new ConfigException.BadValue(key, "'" + path + "' has allow-core-timeout on ("
          + timeout + "); a poller's thread must stay while it is idle");
    }
  }

  private static Backoff backoff(Config c, String path) {
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

}
