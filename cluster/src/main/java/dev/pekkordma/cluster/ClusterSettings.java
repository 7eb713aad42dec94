package dev.pekkordma.cluster;

import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.backoff;
import static dev.pekkordma.config.ConfigChecks.port;
import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import dev.pekkordma.actors.RdmaActorsSettings;
import dev.pekkordma.config.Backoff;
import java.time.Duration;

/**
 * The cluster's settings under {@code pekko-rdma.cluster}, checked when read: a wrong value
 * fails with a {@link ConfigException} naming its full path.
 */
public final class ClusterSettings {
  public static final String ROOT = "pekko-rdma.cluster";
  /** The most receives a member keeps posted per connection: no peer can grant more credits. */
  public static final int MAX_RECEIVE_DEPTH = 4096;

  /** When connections are made. */
  public enum Connect { EAGER, LAZY }

  public final Connect connect;
  public final boolean streams;
  public final String bindHost;
  public final int bindPort;
  public final String advertiseHost;
  public final int advertisePort;
  public final int receiveDepth;
  public final int maxQueuedSends;
  public final int streamParallelism;
  public final Duration describeTimeout;
  public final int describeAttempts;
  public final Duration pendingRequestTimeout;
  public final Duration connectWait;
  public final Duration endpointTimeout;
  public final Duration flushTimeout;
  public final Backoff reconnectBackoff;
  public final int maxRejections;

  private ClusterSettings(Config c) {
    String p = ROOT + ".";
    String mode = c.getString(p + "connect");
    switch (mode) {
      case "eager" -> connect = Connect.EAGER;
      case "lazy" -> connect = Connect.LAZY;
      default -> throw new ConfigException.BadValue(p + "connect",
          "must be eager or lazy, was '" + mode + "'");
    }
    streams = c.getBoolean(p + "streams");
    bindHost = c.getString(p + "bind-host");
    bindPort = port(c, p + "bind-port");
    advertiseHost = c.getString(p + "advertise-host");
    advertisePort = port(c, p + "advertise-port");
    receiveDepth = atLeast(c, p + "receive-depth", 2);
    if (receiveDepth > MAX_RECEIVE_DEPTH) {
      throw new ConfigException.BadValue(p + "receive-depth", "must be at most "
          + MAX_RECEIVE_DEPTH + ", was " + receiveDepth);
    }
    maxQueuedSends = atLeast(c, p + "max-queued-sends", 1);
    streamParallelism = atLeast(c, p + "stream-parallelism", 1);
    describeTimeout = positive(c, p + "describe-timeout");
    describeAttempts = atLeast(c, p + "describe-attempts", 1);
    pendingRequestTimeout = positive(c, p + "pending-request-timeout");
    String accept = RdmaActorsSettings.ROOT + ".cm.accept-timeout";
    if (c.hasPath(accept) && pendingRequestTimeout.compareTo(c.getDuration(accept)) >= 0) {
      throw new ConfigException.BadValue(p + "pending-request-timeout", "must be shorter than "
          + accept + " (" + c.getDuration(accept) + "), which rejects the request on its own; was "
          + pendingRequestTimeout);
    }
    connectWait = positive(c, p + "connect-wait");
    endpointTimeout = positive(c, p + "endpoint-timeout");
    flushTimeout = positive(c, p + "flush-timeout");
    reconnectBackoff = backoff(c, p + "reconnect-backoff");
    maxRejections = atLeast(c, p + "max-rejections", 1);
  }

  /** Reads and checks {@code pekko-rdma.cluster} from a full config (an actor system's). */
  public static ClusterSettings from(Config config) {
    return new ClusterSettings(config);
  }

  /** A duration as config writes it: 2s, 500ms. */
  static String show(Duration d) {
    long ms = d.toMillis();
    return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
  }
}
