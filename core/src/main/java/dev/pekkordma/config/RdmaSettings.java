package dev.pekkordma.config;

import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * The library's settings under {@code pekko-rdma}, checked when read: a wrong value fails with a
 * {@link ConfigException} naming its path.
 */
public final class RdmaSettings {
  public static final String ROOT = "pekko-rdma";
  private static final Set<String> PROVIDERS = Set.of("auto", "native", "soft");

  private final String provider;
  private final SoftSettings soft;
  private final Duration cmConnectTimeout;

  /** Reads from the full config, by full paths, so that every error names the whole path. */
  private RdmaSettings(Config c) {
    provider = c.getString(ROOT + ".provider");
    if (!PROVIDERS.contains(provider)) {
      throw new ConfigException.BadValue(ROOT + ".provider",
          "must be auto, native or soft, was '" + provider + "'");
    }
    soft = new SoftSettings(c);
    cmConnectTimeout = positive(c, ROOT + ".cm.connect-timeout");
  }

  /** Reads and checks {@code pekko-rdma} in {@code config} (with reference.conf beneath it). */
  public static RdmaSettings from(Config config) {
    return new RdmaSettings(config.withFallback(ConfigFactory.defaultReference()).resolve());
  }

  public String provider() { return provider; }

  public SoftSettings soft() { return soft; }

  public Duration cmConnectTimeout() { return cmConnectTimeout; }

  /** The software provider's settings ({@code pekko-rdma.soft}). */
  public static final class SoftSettings {
    private static final String P = ROOT + ".soft.";
    public final List<String> devices;
    public final String fabricHost;
    public final int fabricPort;
    public final String fabricAdvertisedHost;
    public final int fabricAdvertisedPort;
    public final int fabricMaxConnections;
    public final Duration fabricHandshakeTimeout;
    public final Duration fabricFrameTimeout;
    public final int maxQp, maxQpWr, maxSge, maxCq, maxCqe, maxMr, maxPd, maxMw, maxSrq,
        maxSrqWr, maxInlineData, maxQpRdAtom;
    public final long maxMrSize;
    public final int mtu;
    public final long maxMsgSize;

    SoftSettings(Config c) {
      devices = c.getStringList(P + "devices");
      if (devices.isEmpty()) {
        throw new ConfigException.BadValue(P + "devices", "must name at least one device");
      }
      for (String d : devices) {
        if (!d.matches("[A-Za-z0-9_.-]{1,63}")) {
          throw new ConfigException.BadValue(P + "devices",
              "'" + d + "' is not a device name (letters, digits, _ . -, at most 63)");
        }
      }
      if (devices.stream().distinct().count() != devices.size()) {
        throw new ConfigException.BadValue(P + "devices", "names repeat: " + devices);
      }
      fabricHost = c.getString(P + "fabric.host");
      fabricPort = port(c, P + "fabric.port");
      fabricAdvertisedHost = c.getString(P + "fabric.advertised-host");
      fabricAdvertisedPort = port(c, P + "fabric.advertised-port");
      fabricMaxConnections = ConfigChecks.atLeast(c, P + "fabric.max-connections", 1);
      fabricHandshakeTimeout = positive(c, P + "fabric.handshake-timeout");
      fabricFrameTimeout = positive(c, P + "fabric.frame-timeout");
      maxQp = limit(c, "max-qp");
      maxQpWr = limit(c, "max-qp-wr");
      maxSge = limit(c, "max-sge");
      maxCq = limit(c, "max-cq");
      maxCqe = limit(c, "max-cqe");
      maxMr = limit(c, "max-mr");
      maxPd = limit(c, "max-pd");
      maxMw = limit(c, "max-mw");
      maxSrq = limit(c, "max-srq");
      maxSrqWr = limit(c, "max-srq-wr");
      maxInlineData = limit(c, "max-inline-data");
      maxQpRdAtom = limit(c, "max-qp-rd-atom");
      if ((long) maxMr + maxMw > 0xffffff) { // a memory key's 24-bit index names them all
        throw new ConfigException.BadValue(P + "limits.max-mr",
            "max-mr + max-mw must be at most 16777215, was " + ((long) maxMr + maxMw));
      }
      maxMrSize = c.getLong(P + "limits.max-mr-size");
      if (maxMrSize <= 0) {
        throw new ConfigException.BadValue(P + "limits.max-mr-size", "must be positive");
      }
      mtu = c.getInt(P + "mtu");
      if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
        throw new ConfigException.BadValue(P + "mtu",
            "must be 256, 512, 1024, 2048 or 4096, was " + mtu);
      }
      maxMsgSize = c.getLong(P + "max-msg-size");
      if (maxMsgSize < mtu || maxMsgSize > (1L << 31)) {
        throw new ConfigException.BadValue(P + "max-msg-size",
            "must be in [mtu, 2^31], was " + maxMsgSize);
      }
    }

    private static int port(Config c, String path) {
      int p = c.getInt(path);
      if (p < 0 || p > 65535) {
        throw new ConfigException.BadValue(path, "must be in [0, 65535], was " + p);
      }
      return p;
    }

    private static int limit(Config c, String key) {
      int v = c.getInt(P + "limits." + key);
      if (v <= 0) {
        throw new ConfigException.BadValue(P + "limits." + key, "must be positive, was " + v);
      }
      return v;
    }
  }
}
