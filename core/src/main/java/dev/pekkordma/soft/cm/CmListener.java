package dev.pekkordma.soft.cm;

import static dev.pekkordma.soft.cm.CmSocket.closeQuietly;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.soft.tls.SoftTls;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Deque;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The passive side of a listening id: accepts links (TCP connections), gives each a thread of the
 * provider's pool to run TLS (when on) and read its first REQ within the connect timeout, then
 * reads the link ({@link CmLink}), handing each request to the listening id. Until its first REQ
 * has come, a link is nobody's: whatever goes wrong is logged as a refusal naming the peer, and
 * the link closed. When {@code max-pending-handshakes} are waiting, a new connection takes the
 * place of the one that has waited longest: a CM sends its REQ at once, so only a peer that
 * trickles or withholds it is ever the oldest, and peers that do cannot keep others out.
 */
final class CmListener {
  private static final Logger log = LoggerFactory.getLogger(CmListener.class);
  /** A failing accept (out of file descriptors) is retried after this, and logged this seldom. */
  private static final long ACCEPT_RETRY_NANOS = 100_000_000L;
  private static final long ACCEPT_WARNING_NANOS = 10_000_000_000L;
  /** How long a connection closed to make room may take to give its place back. */
  private static final long EVICTION_WAIT_MILLIS = 100;

  private final SoftCmId owner;
  private final ServerSocket server;
  private final CmResources resources;
  private final String address;
  /** Accepted connections whose REQ has not come yet. */
  private final AtomicInteger pending = new AtomicInteger();
  /** Their sockets, oldest first: closed when the listener stops, the oldest to make room. */
  private final Deque<Socket> handshaking = new ConcurrentLinkedDeque<>();
  /** Those closed to make room, so that their threads say why. */
  private final Set<Socket> evicted = ConcurrentHashMap.newKeySet();
  /** Counted down when the thread waiting for a socket's REQ has given its place back. */
  private final Map<Socket, CountDownLatch> released = new ConcurrentHashMap<>();
  private final Thread acceptor;
  private volatile boolean stopped;

  CmListener(SoftCmId owner, ServerSocket server, CmResources resources) {
    this.owner = owner;
    this.server = server;
    this.resources = resources;
    this.address = SocketAddresses.format(
        new InetSocketAddress(server.getInetAddress(), server.getLocalPort()));
    acceptor = CmChecks.daemon("soft-cm-listener-" + server.getLocalPort(), this::acceptLoop);
  }

  void start() {
    acceptor.start();
  }

  /**
   * Closes the listening socket and waits for the accept thread to leave: a thread blocked in
   * accept() keeps the socket listening until the JDK has woken it, so without the wait the port
   * can still answer after close() returned. Connections still sending their REQ are closed.
   */
  void stop() {
    stopped = true;
    closeQuietly(server);
    for (Socket s : handshaking) closeQuietly(s);
    if (acceptor != Thread.currentThread()) {
      try {
        acceptor.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** For tests: connections accepted whose REQ is still awaited. */
  int pending() {
    return pending.get();
  }

  private void acceptLoop() {
    long lastWarning = System.nanoTime() - ACCEPT_WARNING_NANOS;
    while (!server.isClosed()) {
      Socket s;
      try {
        s = server.accept();
      } catch (IOException e) {
        if (server.isClosed()) return; // closed with the id or its device
        // out of file descriptors, say: keep listening, without spinning or flooding the log
        if (System.nanoTime() - lastWarning >= ACCEPT_WARNING_NANOS) {
          lastWarning = System.nanoTime();
          log.warn("soft CM listener {}: accept failed, retrying: {}", address, e.toString());
        }
        LockSupport.parkNanos(ACCEPT_RETRY_NANOS);
        continue;
      }
      try {
        admit(s);
      } catch (RuntimeException e) {
        log.error("soft CM listener {}: dropping a connection after an internal error", address,
            e);
        closeQuietly(s);
      }
    }
  }

  private void admit(Socket s) {
    String peer = CmSocket.describe(s);
    if (server.isClosed()) { // accepted while the close was under way
      refuse(s, peer, "the listener is closing");
      return;
    }
    if (pending.get() >= resources.maxPendingHandshakes && !makeRoom()) {
      refuse(s, peer, resources.maxPendingHandshakes + " connections have not sent their REQ"
          + " yet (" + CmResources.MAX_PENDING + ")");
      return;
    }
    pending.incrementAndGet();
    handshaking.add(s);
    String name = "soft-cm-link-" + server.getLocalPort() + "-" + s.getPort();
    CmSocket plain = null;
    if (!resources.tls.enabled()) {
      try {
        s.setTcpNoDelay(true);
        plain = CmSocket.over(s);
        if (plain.frameArrived()) { // as it usually has: no hand-off to read it
          serveArrived(plain, peer, name);
          return;
        }
      } catch (IOException e) {
        handshaking.remove(s);
        pending.decrementAndGet();
        refuse(s, peer, e.getMessage());
        return;
      }
    }
    CmSocket opened = plain;
    released.put(s, new CountDownLatch(1));
    if (!resources.start(name, () -> serve(s, peer, opened))) {
      released.remove(s);
      handshaking.remove(s);
      pending.decrementAndGet();
      refuse(s, peer, resources.refusal());
    }
  }

  /**
   * Closes the connection that has waited longest for its REQ and waits (briefly) until its
   * thread has given its place (and itself) back; false if none is waiting for a REQ.
   */
  private boolean makeRoom() {
    Socket oldest = handshaking.pollFirst();
    if (oldest == null) return false;
    CountDownLatch done = released.get(oldest);
    evicted.add(oldest); // its thread says why
    closeQuietly(oldest);
    try {
      if (done != null) done.await(EVICTION_WAIT_MILLIS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }

  private void refuse(Socket s, String peer, String why) {
    log.warn("soft CM listener {}: refused connection from {}: {}", address, peer, why);
    closeQuietly(s);
  }

  /** A connection whose REQ (no TLS) has come with it: taken on the listener's thread. */
  private void serveArrived(CmSocket c, String peer, String name) {
    CmMessage.Framed req;
    try {
      req = firstRequest(c);
    } catch (IOException e) {
      refuse(c.socket, peer, e instanceof EOFException
          ? "the peer closed the connection before its REQ" : e.getMessage());
      return;
    } finally {
      handshaking.remove(c.socket);
      pending.decrementAndGet();
    }
    CmLink link = CmLink.passive(c, this::request, resources);
    if (!resources.start(name, () -> link.takeFirst(req), link::readOn)) {
      refuse(c.socket, peer, resources.refusal());
      link.abandon(new IOException(resources.refusal()));
    }
  }

  private static CmMessage.Framed firstRequest(CmSocket c) throws IOException {
    CmMessage.Framed req = c.read();
    if (req.message().kind() != CmMessage.Kind.REQ) {
      throw new ProtocolException("expected REQ, got " + req.message().kind());
    }
    return req;
  }

  /**
   * A new connection's first steps: TLS (or {@code plain}'s framing, begun), then its REQ,
   * within the connect timeout.
   */
  private void serve(Socket raw, String peer, CmSocket plain) {
    Duration limit = resources.connectTimeout.plus(resources.tls.handshakeTimeout());
    // a read timeout alone would let a peer trickling a byte at a time stay for ever; whoever
    // decides first (the deadline or the reading thread) logs and closes, once
    AtomicBoolean decided = new AtomicBoolean();
    String overdue = "no valid REQ within " + limit.toMillis() + " ms ("
        + CmResources.CONNECT_TIMEOUT + (resources.tls.enabled()
            ? " and pekko-rdma.soft.tls.handshake-timeout" : "") + ")";
    Future<?> guard = owner.channel.schedule(() -> {
      if (decided.compareAndSet(false, true)) refuse(raw, peer, overdue);
    }, limit);
    CmSocket c = null;
    CmMessage.Framed req;
    try {
      raw.setTcpNoDelay(true);
      raw.setSoTimeout(CmChecks.millis(limit.multipliedBy(2))); // in case the channel closed
      c = plain != null ? plain : CmSocket.over(resources.tls.server(raw, "CM peer " + peer));
      if (resources.tls.enabled() && log.isDebugEnabled()) {
        log.debug("soft CM listener {}: TLS connection from {} presenting {}", address, peer,
            SoftTls.peerIdentity(c.socket));
      }
      req = firstRequest(c);
      if (!decided.compareAndSet(false, true)) throw new EOFException("closed by the deadline");
      raw.setSoTimeout(0);
    } catch (IOException e) {
      if (decided.compareAndSet(false, true)) {
        refuse(raw, peer, stopped ? "the listener was destroyed"
            : evicted.contains(raw) ? "it waited longest for its REQ while "
                + resources.maxPendingHandshakes + " connections were waiting for theirs; closed"
                + " to make room for a newer one (" + CmResources.MAX_PENDING + ")"
            : e instanceof SocketTimeoutException ? overdue
            : e instanceof EOFException ? "the peer closed the connection before its REQ"
            : e.getMessage());
      }
      closeQuietly(c);
      return;
    } finally {
      if (guard != null) guard.cancel(false);
      handshaking.remove(raw);
      evicted.remove(raw);
      pending.decrementAndGet();
      CountDownLatch done = released.remove(raw);
      if (done != null) done.countDown();
    }
    CmLink.passive(c, this::request, resources).runPassive(req);
  }

  /** A REQ opening conversation {@code n} on {@code link}: the listening id's, or REJ. */
  private void request(CmLink link, int n, CmMessage req) {
    if (owner.offer(link, n, req) != null) return;
    if (!stopped && owner.state() == CmState.LISTEN) {
      log.warn("soft CM listener {}: rejected a connection from {}: {}", address, link.peer,
          resources.refusal());
    }
    link.send(n, CmMessage.rej(CmEvent.REJECT_NO_LISTENER, null));
  }

  @Override
  public String toString() {
    return "CmListener(" + address + ", " + pending.get() + " pending)";
  }
}
