package dev.pekkordma.soft;

import dev.pekkordma.config.RdmaSettings.SoftSettings;
import java.time.Duration;

/**
 * The fabric's bounds ({@code pekko-rdma.soft.fabric}): processes served, handshakes at once,
 * and the deadlines of a handshake, a frame and an idle connection.
 */
record FabricLimits(int maxConnections, int maxHandshakes, Duration handshake, Duration frame,
    Duration idle) {
  /** Connections accepted and not yet proven, per {@code max-handshakes}, before the gate stops. */
  static final int WAITING_PER_HANDSHAKE = 16;

  static FabricLimits of(SoftSettings s) {
    return new FabricLimits(s.fabricMaxConnections, s.fabricMaxHandshakes,
        s.fabricHandshakeTimeout, s.fabricFrameTimeout, s.fabricIdleTimeout);
  }

  /** Connections accepted and not yet proven (or refused), at most. */
  int maxWaiting() {
    return maxHandshakes * WAITING_PER_HANDSHAKE;
  }

  FabricLimits withMaxConnections(int n) {
    return new FabricLimits(n, maxHandshakes, handshake, frame, idle);
  }

  FabricLimits withMaxHandshakes(int n) {
    return new FabricLimits(maxConnections, n, handshake, frame, idle);
  }

  FabricLimits withHandshake(Duration d) {
    return new FabricLimits(maxConnections, maxHandshakes, d, frame, idle);
  }

  FabricLimits withFrame(Duration d) {
    return new FabricLimits(maxConnections, maxHandshakes, handshake, d, idle);
  }

  FabricLimits withIdle(Duration d) {
    return new FabricLimits(maxConnections, maxHandshakes, handshake, frame, d);
  }
}
