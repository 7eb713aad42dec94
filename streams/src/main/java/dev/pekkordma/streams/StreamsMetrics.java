package dev.pekkordma.streams;

import java.util.List;

/**
 * The streams layer of one actor system at one moment ({@link RdmaStreams#metrics}): connections
 * opened (established), closed gracefully and failed, those live now, and the traffic and credit
 * stalls of every connection so far, live or ended. Each count is read without stopping the
 * connections: current to within the moment it took to read them.
 */
public record StreamsMetrics(long opened, long closed, long failed, long bytesSent,
    long messagesSent, long bytesReceived, long messagesReceived, long creditStalls,
    List<ConnectionMetrics> connections) {

  /** Connections up now. */
  public int live() {
    return connections.size();
  }
}
