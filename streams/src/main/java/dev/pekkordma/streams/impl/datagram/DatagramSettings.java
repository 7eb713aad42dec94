package dev.pekkordma.streams.impl.datagram;

import com.typesafe.config.Config;
import dev.pekkordma.annotation.InternalApi;
import java.time.Duration;
import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.positive;

/** The datagram stages' settings, under {@code pekko-rdma.streams.datagram}; checked when read. */
@InternalApi
public record DatagramSettings(int receiveBuffers, int sendBuffers, int maxPeers,
    Duration peerTtl, Duration resolveTimeout) {
  public static final String PATH = "pekko-rdma.streams.datagram";
  /** What a refused memory reservation names. */
  static final String BUFFERS_SETTING = PATH + ".receive-buffers or .send-buffers";

  public static DatagramSettings from(Config c) {
    String p = PATH + ".";
    return new DatagramSettings(atLeast(c, p + "receive-buffers", 1),
        atLeast(c, p + "send-buffers", 1), atLeast(c, p + "max-peers", 1),
        positive(c, p + "peer-ttl"), positive(c, p + "resolve-timeout"));
  }
}
