package dev.pekkordma.streams.impl;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;

/** The streams layer's JDK Flight Recorder events: a connection's life, its end, the totals. */
final class ConnectionEvents {
  private ConnectionEvents() {}

  @Name("dev.pekkordma.streams.ConnectionOpened")
  @Label("RDMA Connection Opened")
  @Category({"pekko-rdma", "Streams"})
  @StackTrace(false)
  static final class Opened extends Event {
    @Label("Role") String role;
    @Label("Remote") String remote;
    @Label("Local") String local;
  }

  /** Spans the connection's life: it begins when the connection is up. */
  @Name("dev.pekkordma.streams.ConnectionClosed")
  @Label("RDMA Connection Closed")
  @Description("A connection's life and what moved over it; outcome is 'closed' or the failure")
  @Category({"pekko-rdma", "Streams"})
  @StackTrace(false)
  static final class Closed extends Event {
    @Label("Role") String role;
    @Label("Remote") String remote;
    @Label("Outcome") String outcome;
    @Label("Bytes Sent") @DataAmount long bytesSent;
    @Label("Messages Sent") long messagesSent;
    @Label("Bytes Received") @DataAmount long bytesReceived;
    @Label("Messages Received") long messagesReceived;
    @Label("Credit Stalls") long creditStalls;
  }

  @Name("dev.pekkordma.streams.ConnectionError")
  @Label("RDMA Connection Error")
  @Category({"pekko-rdma", "Streams"})
  @StackTrace(false)
  static final class Error extends Event {
    @Label("Remote") String remote;
    @Label("Phase") String phase;
    @Label("Message") String message;
  }

  /** The streams' totals, every period the recording asks for (1 s by default). */
  @Name("dev.pekkordma.streams.Transfer")
  @Label("RDMA Streams Transfer")
  @Category({"pekko-rdma", "Streams"})
  @Period("1 s")
  @StackTrace(false)
  static final class Transfer extends Event {
    @Label("Live Connections") int live;
    @Label("Bytes Sent") @DataAmount long bytesSent;
    @Label("Messages Sent") long messagesSent;
    @Label("Bytes Received") @DataAmount long bytesReceived;
    @Label("Messages Received") long messagesReceived;
    @Label("Credit Stalls") long creditStalls;
    @Label("Failed Connections") long failed;
  }
}
