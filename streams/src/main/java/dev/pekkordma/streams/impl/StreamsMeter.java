package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.streams.ConnectionMetrics;
import dev.pekkordma.streams.StreamsMetrics;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import jdk.jfr.FlightRecorder;

/**
 * The streams' metrics in one actor system: each live connection's {@link ConnectionMeter} (its
 * {@link Traffic} both ways, counted by its stage), the totals of those that ended, and the JDK
 * Flight Recorder events. Reading them ({@link #snapshot}) takes no lock a connection waits on.
 */
@InternalApi
public final class StreamsMeter {
  private final Set<ConnectionMeter> live = ConcurrentHashMap.newKeySet();
  private final LongAdder opened = new LongAdder();
  private final LongAdder closed = new LongAdder();
  private final LongAdder failed = new LongAdder();
  private final LongAdder bytesSent = new LongAdder();
  private final LongAdder messagesSent = new LongAdder();
  private final LongAdder bytesReceived = new LongAdder();
  private final LongAdder messagesReceived = new LongAdder();
  private final LongAdder stalls = new LongAdder();
  private final Runnable periodic = this::emitTransfer;

  StreamsMeter() {
    FlightRecorder.addPeriodicEvent(ConnectionEvents.Transfer.class, periodic);
  }

  /** The system is going: no more periodic events from it. */
  void close() {
    FlightRecorder.removePeriodicEvent(periodic);
  }

  /** A connection is up: counted, and seen by the metrics until it ends. */
  ConnectionMeter opened(
      String role,
      InetSocketAddress remote,
      InetSocketAddress local,
      Traffic sent,
      Traffic received) {
    ConnectionMeter c = new ConnectionMeter(role, remote, local, sent, received);
    opened.increment();
    live.add(c);
    ConnectionEvents.Opened e = new ConnectionEvents.Opened();
    if (e.isEnabled()) {
      e.role = role;
      e.remote = String.valueOf(remote);
      e.local = String.valueOf(local);
      e.commit();
    }
    return c;
  }

  /**
   * A connection failed: {@code running} its meter, or null when it failed before it was up
   * (resolving, connecting, accepting, binding: {@code phase}).
   */
  void failed(ConnectionMeter running, InetSocketAddress remote, String phase, Throwable why) {
    String message = String.valueOf(why.getMessage());
    if (running != null) {
      running.ended(message);
      return;
    }
    failed.increment();
    error(remote, phase.toLowerCase(java.util.Locale.ROOT), message);
  }

  private static void error(InetSocketAddress remote, String phase, String message) {
    ConnectionEvents.Error e = new ConnectionEvents.Error();
    if (e.isEnabled()) {
      e.remote = String.valueOf(remote);
      e.phase = phase;
      e.message = message;
      e.commit();
    }
  }

  public StreamsMetrics snapshot() {
    List<ConnectionMetrics> now = new ArrayList<>(live.size());
    long bs = bytesSent.sum();
    long ms = messagesSent.sum();
    long br = bytesReceived.sum();
    long mr = messagesReceived.sum();
    long st = stalls.sum();
    for (ConnectionMeter c : live) {
      ConnectionMetrics m = c.metrics();
      now.add(m);
      bs += m.bytesSent();
      ms += m.messagesSent();
      br += m.bytesReceived();
      mr += m.messagesReceived();
      st += m.creditStalls();
    }
    return new StreamsMetrics(opened.sum(), closed.sum(), failed.sum(), bs, ms, br, mr, st,
        List.copyOf(now));
  }

  private void emitTransfer() {
    ConnectionEvents.Transfer e = new ConnectionEvents.Transfer();
    if (!e.isEnabled()) return;
    StreamsMetrics m = snapshot();
    e.live = m.live();
    e.bytesSent = m.bytesSent();
    e.messagesSent = m.messagesSent();
    e.bytesReceived = m.bytesReceived();
    e.messagesReceived = m.messagesReceived();
    e.creditStalls = m.creditStalls();
    e.failed = m.failed();
    e.commit();
  }

  /** One live connection's meter, used on its stage's thread; read from any. */
  final class ConnectionMeter {
    private static final VarHandle STALLS;

    static {
      try {
        STALLS = MethodHandles.lookup().findVarHandle(ConnectionMeter.class, "creditStalls",
            long.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final String role;
    private final InetSocketAddress remote;
    private final InetSocketAddress local;
    private final Traffic sent;
    private final Traffic received;
    private final long upSince = System.nanoTime();
    private final ConnectionEvents.Closed life = new ConnectionEvents.Closed();
    private long creditStalls;
    private boolean waiting; // for a credit, since the last send
    private boolean ended;

    ConnectionMeter(String role, InetSocketAddress remote, InetSocketAddress local, Traffic sent,
        Traffic received) {
      this.role = role;
      this.remote = remote;
      this.local = local;
      this.sent = sent;
      this.received = received;
      life.begin();
    }

    /** After a try to send: {@code noCredit}, an element waits for the peer to free a slot. */
    void sendTried(boolean noCredit) {
      if (noCredit && !waiting) STALLS.setOpaque(this, creditStalls + 1);
      waiting = noCredit;
    }

    /** The connection ended: gracefully ({@code failure} null) or not. Once. */
    void ended(String failure) {
      if (ended) return;
      ended = true;
      bytesSent.add(sent.bytes());
      messagesSent.add(sent.messages());
      bytesReceived.add(received.bytes());
      messagesReceived.add(received.messages());
      stalls.add(creditStalls);
      (failure == null ? closed : failed).increment();
      live.remove(this);
      if (failure != null) error(remote, "running", failure);
      if (life.isEnabled()) {
        life.end();
        life.role = role;
        life.remote = String.valueOf(remote);
        life.outcome = failure == null ? "closed" : failure;
        life.bytesSent = sent.bytes();
        life.messagesSent = sent.messages();
        life.bytesReceived = received.bytes();
        life.messagesReceived = received.messages();
        life.creditStalls = creditStalls;
        life.commit();
      }
    }

    ConnectionMetrics metrics() {
      return new ConnectionMetrics(role, remote, local,
          Duration.ofNanos(System.nanoTime() - upSince), sent.bytes(), sent.messages(),
          received.bytes(), received.messages(), (long) STALLS.getOpaque(this));
    }
  }
}
