package dev.pekkordma.actors.datagram;

import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.backoff;
import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import dev.pekkordma.config.Backoff;
import java.time.Duration;

/** The datagram actors' settings, under {@code pekko-rdma.actors.datagram}; checked when read. */
public final class DatagramSettings {
  public static final String PATH = "pekko-rdma.actors.datagram";
  /** What a refused memory reservation names. */
  static final String BUFFERS_SETTING = PATH + ".receive-buffers or .send-buffers";

  public final int receiveBuffers;
  public final int sendBuffers;
  public final int maxPendingSends;
  public final int maxPeers;
  public final Duration peerTtl;
  public final Duration resolveTimeout;
  public final Backoff restartBackoff;

  private DatagramSettings(Config c) {
    String p = PATH + ".";
    receiveBuffers = atLeast(c, p + "receive-buffers", 1);
    sendBuffers = atLeast(c, p + "send-buffers", 1);
    maxPendingSends = atLeast(c, p + "max-pending-sends", 0);
    maxPeers = atLeast(c, p + "max-peers", 1);
    peerTtl = positive(c, p + "peer-ttl");
    resolveTimeout = positive(c, p + "resolve-timeout");
    restartBackoff = backoff(c, p + "restart-backoff");
  }

  public static DatagramSettings from(Config config) {
    return new DatagramSettings(config);
  }
}
