package dev.pekkordma.actors;

import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.backoff;
import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import dev.pekkordma.config.Backoff;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import java.time.Duration;
import java.util.List;

/**
 * The actors' settings under {@code pekko-rdma.actors} (their pollers' are the runtime's,
 * under {@code pekko-rdma.runtime}), checked when read: a wrong value fails
 * with a {@link ConfigException} naming its full path.
 */
public final class RdmaActorsSettings {
  public static final String ROOT = "pekko-rdma.actors";

  public final List<String> devices;
  public final Backoff reopenBackoff;
  public final int cqSize;
  public final Backoff qpRestartBackoff;
  public final int bufferSize;
  public final int slabSize;
  public final int slabs;
  public final Duration connectTimeout;
  public final Duration acceptTimeout;
  public final Duration disconnectTimeout;
  public final Duration cmDeviceIdleTimeout;
  public final int backlog;
  public final Backoff connectRetry;
  public final int maxConnectAttempts;
  /** The datagram endpoints' and groups' settings (internal: read from the config alone). */
  final DatagramSettings datagram;

  private RdmaActorsSettings(Config c) {
    String p = ROOT + ".";
    devices = c.getStringList(p + "devices");
    if (devices.stream().distinct().count() != devices.size()) {
      throw new ConfigException.BadValue(p + "devices", "names repeat: " + devices);
    }
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
    datagram = DatagramSettings.from(c, DatagramSettings.ACTORS);
  }

  /** Reads and checks {@code pekko-rdma.actors} from a full config (an actor system's). */
  public static RdmaActorsSettings from(Config config) {
    return new RdmaActorsSettings(config);
  }
}
