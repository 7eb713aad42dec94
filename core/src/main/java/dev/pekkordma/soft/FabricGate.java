package dev.pekkordma.soft;

import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.soft.tls.SoftTls;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tlschannel.NeedsReadException;
import tlschannel.TlsChannel;
import tlschannel.WouldBlockException;

/**
 * Where connections to the fabric come in, before anything is proven: one thread accepts them
 * and reads each one's 24-byte opening without blocking, holding nothing for it but the socket
 * and those bytes, so a peer that sends nothing, or a byte now and then, costs a socket and
 * holds no thread. Each connection has its handshake deadline from the moment it is accepted.
 *
 * <p>A LINK's whole handshake runs here too, up to WELCOME: under TLS the TLS handshake first,
 * on an SSLEngine over the non-blocking channel ({@code tls-channel}); then its HELLO is read
 * without blocking, judged ({@link LinkHandshake}), and the listener it claims is called back
 * without blocking ({@link ProofCall}, under TLS a TLS client as well); only a proven connection
 * is made blocking and handed to the served processes, which go on reading and writing through
 * the same TLS channel. So peers that stall a handshake, at any step, TLS's included, hold no
 * thread that another's handshake needs. (The engine's delegated tasks, checking certificates,
 * run here too: a few milliseconds of work, never a wait on a peer.) A PROOF about a nonce this
 * process is waiting on goes to a lane of its own, which no one else can fill (its nonces are
 * secret and taken once). Connections not yet proven are bounded ({@link FabricLimits#maxWaiting}); past it
 * the gate stops accepting until some are done, leaving the rest in the system's accept queue:
 * waiting, never refused.
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
  private final SoftTls tls;
  /**
   * Work on channels whose keys were cancelled, done once the selector has let go of them (only
   * then may a channel block).
   */
  private final List<Runnable> handOffs = new ArrayList<>();

  FabricGate(TcpFabric fabric, ServerSocketChannel server) throws IOException {
    this.fabric = fabric;
    this.server = server;
    this.tls = fabric.tls();
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

  /** What the gate's thread does when a channel it watches is ready. */
  interface Ready {
    void ready(SelectionKey k);
  }

  /** A connection that came in: its socket, its handshake as read so far, its deadline. */
  final class Arrival implements Ready {
    final SocketChannel channel;
    final String remote;
    final ByteBuffer opening = ByteBuffer.allocate(FabricWire.OPENING_BYTES);
    final Deadline deadline;
    /** What it was doing, for the line logged if its deadline passes. */
    volatile String stage = "sending its opening";
    /** A LINK handshaking here: its HELLO as read so far, and its state. */
    private ByteBuffer hello;
    private LinkHandshake handshake;
    /** What the HELLO and the answer go through: the channel, or TLS over it. */
    private ByteChannel talk;
    /** Under TLS: the server side, and the bound of its handshake (null once it is done). */
    private TlsChannel secured;
    private Deadline tlsDeadline;
    /** Its HELLO's call back while the claimed listener is asked; null before and after. */
    private ProofCall call;
    private boolean done;

    Arrival(SocketChannel channel) {
      this.channel = channel;
      this.remote = describe(channel);
      this.talk = channel;
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

    /**
     * Reads what came of its opening, makes its TLS handshake, reads its HELLO: each as far as
     * the channel lets it now, going on when one is complete.
     */
    @Override
    public void ready(SelectionKey k) {
      if (call != null) {
        spokeWhileProven();
        return;
      }
      try {
        if (hello == null) {
          if (!readFully(channel, opening)) return;
          opened(k);
          if (hello == null || tlsDeadline != null) return; // refused, gone to a lane, or TLS
        }
        if (tlsDeadline != null && secured == null) { // its first TLS bytes: the engine is made
          secured = tls.serverChannel(channel);
          talk = secured;
        }
        if (tlsDeadline != null) {
          secured.handshake();
          if (!tlsDeadline.settle()) return; // too late: it was closed and said so
          tlsDeadline = null;
          stage = "sending its HELLO";
        }
        if (!readFully(talk, hello)) return;
      } catch (WouldBlockException e) {
        awaitTls(k, e);
        return;
      } catch (EOFException | ClosedChannelException e) { // it hung up: nothing refused
        LOG.debug("soft fabric: {} closed the connection {}", remote,
            hello == null ? "before its opening" : "mid-handshake");
        close(this);
        return;
      } catch (IOException e) {
        if (tlsDeadline != null && tlsDeadline.settle()) {
          fabric.refusals().refuse(remote, "TLS: " + SoftTls.handshakeFailure(remote, e));
        }
        close(this);
        return;
      }
      k.interestOps(SelectionKey.OP_READ);
      SSLSession session = secured == null ? null : secured.getSslEngine().getSession();
      act(k, handshake.hello(hello.array(),
          from -> tls.enabled() ? tls.claimRefusal(session, from.inetAddress(), from.port())
              : null,
          fabric.served()::hasRoomFor, SoftTls.localCertificateBytes(session),
          SoftTls.peerCertificateBytes(session)));
    }

    /** The TLS handshake took longer than the TLS settings allow: refused, naming that. */
    private void tlsOverdue() {
      if (!deadline.settle()) return; // its own deadline came first and said so
      fabric.refusals().refuse(remote, "TLS: " + tls.handshakeOverdue(remote));
      closeQuietly(channel);
      done();
      selector.wakeup();
    }

    /**
     * It sent something while the listener it names is asked: it hung up (its place is free at
     * once, not at its deadline), or it did not wait for the answer to its HELLO.
     */
    private void spokeWhileProven() {
      int n;
      try {
        drain.clear();
        n = talk.read(drain);
      } catch (WouldBlockException e) { // part of a TLS record: not yet
        n = 0;
      } catch (IOException e) {
        n = -1;
      }
      if (n == 0) return;
      call.abandon();
      if (n < 0) {
        LOG.debug("soft fabric: {} closed the connection mid-handshake", remote);
        close(this);
      } else if (deadline.settle()) {
        refuse(this, "it sent bytes before the answer to its HELLO");
      } else {
        close(this);
      }
    }

    /** Its opening came: it goes where it asks to go, or is refused. */
    private void opened(SelectionKey k) {
      byte purpose;
      byte[] nonce = null;
      try {
        purpose = FabricWire.purpose(opening);
        if (purpose == FabricWire.PROOF) {
          nonce = FabricWire.openingNonce(opening);
          if (!fabric.nonces().claim(nonce)) {
            refuse(this, "it asks about a nonce this process is not waiting on (or another"
                + " connection asked already)");
            return;
          }
        }
      } catch (FabricWire.FabricViolation v) {
        refuse(this, v.getMessage());
        return;
      }
      if (purpose == FabricWire.LINK) {
        hello = ByteBuffer.allocate(FabricWire.HANDSHAKE_BYTES);
        handshake = new LinkHandshake(fabric.address());
        stage = "sending its HELLO";
        if (tls.enabled()) { // the engine is made when its first TLS bytes come
          stage = "in its TLS handshake";
          tlsDeadline = fabric.deadline(tls.handshakeTimeout(),
              "pekko-rdma.soft.tls.handshake-timeout", this::tlsOverdue);
          tlsDeadline.guard(channel);
        }
        return;
      }
      k.cancel();
      byte[] asked = nonce;
      handOffs.add(() -> toLane(asked));
    }

    /** Does what its handshake says next. */
    private void act(SelectionKey k, LinkHandshake.Action next) {
      if (next instanceof LinkHandshake.AskProof ask) {
        stage = handshake.proving();
        call = new ProofCall(ask, tls, answer -> {
          call = null;
          act(k, handshake.proofAnswered(answer));
        });
        call.start(selector, deadline);
        return;
      }
      if (!deadline.settle()) { // too late: the deadline closed it and said so
        close(this);
      } else if (next instanceof LinkHandshake.Drop drop) {
        refuse(this, drop.why());
      } else if (next instanceof LinkHandshake.Refuse refusal) {
        fabric.refusals().refuse(remote, refusal.why());
        try {
          talk.write(ByteBuffer.wrap(LinkHandshake.refused(refusal.code())));
        } catch (IOException e) {
          // gone already, or its buffers full: closing anyway
        }
        close(this);
      } else {
        LinkHandshake.Welcome welcome = (LinkHandshake.Welcome) next;
        k.cancel();
        handOffs.add(() -> welcome(welcome));
      }
    }

    /** Proven and in time: served as the process it proved, on a blocking channel. */
    private void welcome(LinkHandshake.Welcome welcome) {
      boolean welcomed = false;
      try {
        channel.configureBlocking(true);
        welcomed = fabric.handshakes().welcome(secured == null
            ? FabricConnection.Ends.of(channel.socket()) : FabricConnection.Ends.of(channel, secured),
            this, welcome);
      } catch (IOException e) {
        LOG.debug("soft fabric: handshake with {} failed: {}", remote, e.toString());
      } finally {
        if (!welcomed) closeQuietly(channel);
        done();
      }
    }

    /** A PROOF to its lane. */
    private void toLane(byte[] nonce) {
      try {
        channel.configureBlocking(true);
      } catch (IOException e) { // closed by its deadline meanwhile, say
        close(this);
        return;
      }
      stage = "answering a proof";
      fabric.handshakes().answerProof(this, nonce);
    }
  }

  private void run() {
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
          try {
            if (!k.isValid()) continue;
            if (k.isAcceptable()) {
              accept();
            } else {
              ((Ready) k.attachment()).ready(k);
            }
          } catch (CancelledKeyException e) {
            // its deadline closed the channel meanwhile
          } catch (RuntimeException e) { // a fault of ours: that connection goes, the gate stays
            LOG.error("soft fabric: a connection's handshake failed", e);
            if (k.attachment() instanceof Arrival a) close(a);
          }
        }
        if (handOffs.isEmpty()) continue;
        selector.selectNow(); // deregisters the cancelled keys, so their channels may block
        for (Runnable r : handOffs) {
          try {
            r.run();
          } catch (RuntimeException e) {
            LOG.error("soft fabric: handing a connection on failed", e);
          }
        }
        handOffs.clear();
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

  /** Under TLS: watches {@code k} for what the engine needs of its channel next. */
  static void awaitTls(SelectionKey k, WouldBlockException e) {
    k.interestOps(e instanceof NeedsReadException ? SelectionKey.OP_READ : SelectionKey.OP_WRITE);
  }

  /** Reads into {@code into} as far as {@code from} has bytes; true once it is full. */
  private static boolean readFully(ReadableByteChannel from, ByteBuffer into) throws IOException {
    while (into.hasRemaining()) {
      int n = from.read(into);
      if (n < 0) throw new EOFException("closed");
      if (n == 0) return false;
    }
    return true;
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

  /** Ends a connection refused or failed before it was welcomed or its proof's lane had it. */
  void close(Arrival a) {
    a.deadline.settle();
    if (a.tlsDeadline != null) a.tlsDeadline.settle();
    closeQuietly(a.channel);
    a.done();
  }

  private static void closeQuietly(SocketChannel c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }

  /** Stops taking connections: the listener closes. */
  void stop() {
    try {
      selector.close();
      server.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }

  private static String describe(SocketChannel c) {
    try {
      InetSocketAddress a = (InetSocketAddress) c.getRemoteAddress();
      return SocketAddresses.format(a);
    } catch (IOException | RuntimeException e) {
      return "an unconnected peer";
    }
  }
}
