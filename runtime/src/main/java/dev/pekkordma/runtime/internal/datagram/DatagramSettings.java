package dev.pekkordma.runtime.internal.datagram;

import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.backoff;
import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.config.Backoff;
import java.time.Duration;

/**
 * A facade's datagram settings, read from its own path ({@code pekko-rdma.actors.datagram},
 * {@code pekko-rdma.streams.datagram}; both start from {@code pekko-rdma.datagram-defaults}) and
 * checked when read. {@code maxPendingSends} and {@code restartBackoff} are the actors' alone: a
 * stream backpressures its sends and fails rather than restarting.
 */
@InternalApi
public record DatagramSettings(String path, int receiveBuffers, int sendBuffers,
    int maxPendingSends, int maxPeers, Duration peerTtl, Duration resolveTimeout,
    Backoff restartBackoff) {
  public static final String ACTORS = "pekko-rdma.actors.datagram";
  public static final String STREAMS = "pekko-rdma.streams.datagram";

  /** The settings under {@code path} (one of {@link #ACTORS} and {@link #STREAMS}). */
  public static DatagramSettings from(Config c, String path) {
    String p = path + ".";
    return new DatagramSettings(path, atLeast(c, p + "receive-buffers", 1),
        atLeast(c, p + "send-buffers", 1), atLeast(c, p + "max-pending-sends", 0),
        atLeast(c, p + "max-peers", 1), positive(c, p + "peer-ttl"),
        positive(c, p + "resolve-timeout"), backoff(c, p + "restart-backoff"));
  }

  /** The full name of the setting {@code name} under this path, for a refusal to name. */
  public String setting(String name) {
    return path + "." + name;
  }

  /** What a refused memory reservation names. */
  public String buffersSetting() {
    return path + ".receive-buffers or .send-buffers";
  }
}
