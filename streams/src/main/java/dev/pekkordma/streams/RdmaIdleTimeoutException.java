package dev.pekkordma.streams;

import java.net.InetSocketAddress;
import java.time.Duration;

/** No data went either way on a connection for its idle timeout (like Tcp's). */
public final class RdmaIdleTimeoutException extends RdmaStreamException {
  private final Duration timeout;

  public RdmaIdleTimeoutException(InetSocketAddress peer, Duration timeout, String setting) {
    super("RDMA connection to", peer, "no data in either direction for " + timeout + " ("
        + setting + ")");
    this.timeout = timeout;
  }

  public Duration timeout() {
    return timeout;
  }
}
