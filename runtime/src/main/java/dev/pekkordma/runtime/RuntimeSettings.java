package dev.pekkordma.runtime;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.runtime.internal.BackoffIdleStrategy;
import dev.pekkordma.runtime.internal.BusySpinIdleStrategy;
import dev.pekkordma.runtime.internal.IdleStrategy;
import java.time.Duration;
import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.positive;

/**
 * The runtime's settings under {@code pekko-rdma.runtime}, checked when read: a wrong value fails
 * with a {@link ConfigException} naming its full path.
 */
public final class RuntimeSettings {
  public static final String ROOT = "pekko-rdma.runtime";
  private static final Duration LONGEST_BLOCK = Duration.ofSeconds(10);

  /** What a poller does after a round that found nothing to do. */
  public enum Idle { BACKOFF, BUSY_SPIN }

  public final Idle idle;
  public final int maxSpins;
  public final int maxYields;
  public final Duration blockTimeout;
  public final int batchSize;
  public final long maxRegisteredMemory;

  private RuntimeSettings(Config c) {
    String p = ROOT + ".";
    String idleName = c.getString(p + "poller.idle-strategy");
    idle = switch (idleName) {
      case "backoff" -> Idle.BACKOFF;
      case "busy-spin" -> Idle.BUSY_SPIN;
      default -> throw new ConfigException.BadValue(p + "poller.idle-strategy",
          "must be backoff or busy-spin, was '" + idleName + "'");
    };
    maxSpins = atLeast(c, p + "poller.max-spins", 0);
    maxYields = atLeast(c, p + "poller.max-yields", 0);
    blockTimeout = positive(c, p + "poller.block-timeout");
    if (blockTimeout.compareTo(LONGEST_BLOCK) > 0) {
      throw new ConfigException.BadValue(p + "poller.block-timeout", "must be at most "
          + LONGEST_BLOCK + " (a poller answers a stop only between blocks), was " + blockTimeout);
    }
    batchSize = atLeast(c, p + "poller.batch-size", 1);
    maxRegisteredMemory = registeredMemory(c, MemoryBudget.SETTING);
  }

  /** Reads and checks {@code pekko-rdma.runtime} from a full config (an actor system's). */
  public static RuntimeSettings from(Config config) {
    return new RuntimeSettings(config);
  }

  /** A new idle strategy as configured, for one poller. */
  @InternalApi
  public IdleStrategy newIdleStrategy() {
    return idle == Idle.BUSY_SPIN ? new BusySpinIdleStrategy()
        : new BackoffIdleStrategy(maxSpins, maxYields, blockTimeout);
  }

  private static long registeredMemory(Config c, String key) {
    long direct = MemoryBudget.directMemoryLimit();
    if (c.getValue(key).unwrapped().equals("auto")) return MemoryBudget.automatic();
    long bytes;
    try {
      bytes = c.getBytes(key);
    } catch (ConfigException e) {
      throw new ConfigException.BadValue(key, "must be auto or a size such as 2GiB, was "
          + c.getValue(key).render());
    }
    if (bytes <= 0 || bytes > direct) {
      throw new ConfigException.BadValue(key, "must be in [1, " + direct + "] (the JVM's direct"
          + " memory limit, -XX:MaxDirectMemorySize), was " + bytes);
    }
    return bytes;
  }
}
