package dev.pekkordma.soft;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where connections to the fabric come in, before anything is proven: one thread accepts them
 * and reads each one's 24-byte opening without blocking, holding nothing for it but the socket
 * and those bytes, so a peer that sends nothing, or a byte now and then, costs a socket and
 * holds no thread. Each connection has its handshake deadline from the moment it is accepted.
 * A complete opening sends the connection on: a LINK to the handshake threads (in the order
 * they came), a PROOF about a nonce this process is waiting on to a lane of its own, which no
 * one else can fill (its nonces are secret and taken once). Connections not yet proven are
 * bounded ({@link FabricLimits#maxWaiting}); past it the gate stops accepting until some are
 * done, leaving the rest in the system's accept queue: waiting, never refused.
 */
final class FabricGate {
  private static final Logger LOG = LoggerFactory.getLogger(FabricGate.class);
  private static final long ACCEPT_RETRY_NANOS = 100_000_000L;

  private final TcpFabric fabric;
  private final ServerSocketChannel server;
  private final Selector selector;
  private final Thread thread;
  /** Accepted and not yet proven, refused or failed: every Arrival not yet done. */
  private final AtomicInteger waiting = new AtomicInteger();
  /** Where what a refused peer sent goes, so that closing is a close, not a reset. */
  private final ByteBuffer drain = ByteBuffer.allocate(4096);

  FabricGate(TcpFabric fabric, ServerSocketChannel server) throws IOException {
    this.fabric = fabric;
    this.server = server;
    this.selector = Selector.open();
    server.configureBlocking(false);
    server.register(selector, SelectionKey.OP_ACCEPT);
    int port = server.socket().getLocalPort();
    this.thread = new Thread(this::run, "soft-rdma-fabric-gate-" + port);
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Connections accepted and not yet done with their handshake. */
  int waiting() {
    return waiting.get();
  }

  /** A connection that came in: its socket, its opening as read so far, its deadline. */
  final class Arrival {
    final SocketChannel channel;
    final String remote;
    final ByteBuffer opening = ByteBuffer.allocate(FabricWire.OPENING_BYTES);
    final Deadline deadline;
    /** What it was doing, for the line logged if its deadline passes. */
    volatile String stage = "sending its opening";
    private boolean done;

    Arrival(SocketChannel channel) {
      this.channel = channel;
      this.remote = describe(channel);
      this.deadline = fabric.deadline(this::overdue);
      deadline.guard(channel);
    }

    private void overdue() {
      fabric.refusals().refuse(remote, "no handshake within "
          + fabric.limits().handshake().toMillis() + " ms of its arrival, while " + stage
          + " (pekko-rdma.soft.fabric.handshake-timeout); the connection is closed");
      done();
      selector.wakeup(); // the channel's key goes at the next select
    }

    /** Its handshake is over, whichever way: its place is free. Idempotent. */
    void done() {
      synchronized (this) {
        if (done) return;
        done = true;
      }
      if (waiting.decrementAndGet() == fabric.limits().maxWaiting() - 1) selector.wakeup();
    }
  }

  private void run() {
    List<Arrival> opened = new ArrayList<>();
    try {
      while (selector.isOpen()) {
        SelectionKey accepting = server.keyFor(selector);
        boolean room = waiting.get() < fabric.limits().maxWaiting();
        accepting.interestOps(room ? SelectionKey.OP_ACCEPT : 0);
        selector.select(1000);
        Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
        while (keys.hasNext()) {
          SelectionKey k = keys.next();
          keys.remove();
          if (!k.isValid()) continue;
          if (k.isAcceptable()) {
            accept();
          } else if (k.isReadable() && read(k)) {
            opened.add((Arrival) k.attachment());
          }
        }
        if (opened.isEmpty()) continue;
        selector.selectNow(); // deregisters their keys, so their channels may block
        for (Arrival a : opened) route(a);
        opened.clear();
      }
    } catch (ClosedSelectorException e) {
      // closed: the JVM is ending
    } catch (IOException | RuntimeException e) {
      LOG.error("soft fabric: the gate stopped; no more connections are taken", e);
    }
  }

  private void accept() {
    while (waiting.get() < fabric.limits().maxWaiting()) {
      SocketChannel c;
      try {
        c = server.accept();
      } catch (IOException e) { // out of file descriptors, say: keep going without spinning
        LOG.warn("soft fabric: accepting a connection failed: {}", e.toString());
        LockSupport.parkNanos(ACCEPT_RETRY_NANOS);
        return;
      }
      if (c == null) return;
      waiting.incrementAndGet();
      Arrival a = new Arrival(c);
      try {
        c.configureBlocking(false);
        c.socket().setTcpNoDelay(true);
        c.register(selector, SelectionKey.OP_READ, a);
      } catch (IOException e) {
        close(a);
      }
    }
  }

  /** Reads what came of {@code k}'s opening; true when it is complete (its key cancelled). */
  private boolean read(SelectionKey k) {
    Arrival a = (Arrival) k.attachment();
    try {
      if (a.channel.read(a.opening) < 0) { // a port scan, a health check: nothing refused
        LOG.debug("soft fabric: {} closed the connection before its opening", a.remote);
        k.cancel();
        close(a);
        return false;
      }
    } catch (IOException e) {
      k.cancel();
      close(a);
      return false;
    }
    if (a.opening.hasRemaining()) return false;
    k.cancel();
    return true;
  }

  /** Sends a connection whose opening came where it asks to go, or refuses it. */
  private void route(Arrival a) {
    byte purpose;
    byte[] nonce = null;
    try {
      purpose = FabricWire.purpose(a.opening);
      if (purpose == FabricWire.PROOF) {
        nonce = FabricWire.openingNonce(a.opening);
        if (!fabric.nonces().claim(nonce)) {
          refuse(a, "it asks about a nonce this process is not waiting on (or another"
              + " connection asked already)");
          return;
        }
      }
    } catch (FabricWire.Violation v) {
      refuse(a, v.getMessage());
      return;
    }
    try {
      a.channel.configureBlocking(true);
    } catch (IOException e) { // closed by its deadline meanwhile, say
      close(a);
      return;
    }
    if (purpose == FabricWire.LINK) {
      a.stage = "waiting for a handshake thread";
      fabric.handshakes().admitLink(a);
    } else {
      a.stage = "answering a proof";
      fabric.handshakes().answerProof(a, nonce);
    }
  }

  /** Logs why, then closes the connection after reading what it sent (a reset would hide it). */
  private void refuse(Arrival a, String why) {
    fabric.refusals().refuse(a.remote, why + "; the connection is dropped");
    try {
      drain.clear();
      a.channel.read(drain);
    } catch (IOException e) {
      // closing anyway
    }
    close(a);
  }

  /** Ends a connection refused or failed before any handshake thread had it. */
  void close(Arrival a) {
    a.deadline.settle();
    try {
      a.channel.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
    a.done();
  }

  void stop() {
    try {
      selector.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }

  private static String describe(SocketChannel c) {
    try {
      InetSocketAddress a = (InetSocketAddress) c.getRemoteAddress();
      return a.getAddress().getHostAddress() + ":" + a.getPort();
    } catch (IOException | RuntimeException e) {
      return "an unconnected peer";
    }
  }
}
