package dev.pekkordma.soft.cm;

import static dev.pekkordma.soft.cm.CmChecks.errnoOf;
import static dev.pekkordma.soft.cm.CmChecks.millis;
import static dev.pekkordma.soft.cm.CmChecks.newPsn;
import static dev.pekkordma.soft.cm.CmChecks.requireAddress;
import static dev.pekkordma.soft.cm.CmChecks.requireTimeout;
import static dev.pekkordma.soft.cm.CmChecks.smaller;
import static dev.pekkordma.soft.cm.CmSocket.closeQuietly;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.soft.SoftCmSupport;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Arrays;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A CM id of the software provider ({@code rdma_cm_id} with RDMA_PS_TCP). Its address is a real
 * TCP address: a listener is a server socket, and a connection is a TCP connection that carries
 * the IB CM's handshake (REQ, REP, RTU, REJ, DREQ, DREP) while the QPs it connects talk through
 * the provider's fabric. The TCP connection also stands for the peer being alive: when it breaks,
 * the peer is gone.
 *
 * <p>State lives under the id's monitor. Each connection has one thread reading its messages,
 * from the provider's bounded pool ({@link CmResources}), a listener one thread accepting
 * ({@link CmListener}); deadlines and short steps run on the channel's thread. Every frame a
 * peer sends is checked before it is acted on; one out of place ends the connection, logged.
 */
public final class SoftCmId implements CmId {
  /** rdma_cm's id states, with the steps of a connection spelled out. */
  enum State {
    IDLE, ADDR_QUERY, ADDR_BOUND, ADDR_RESOLVED, ROUTE_QUERY, ROUTE_RESOLVED, LISTEN,
    /** Active side: REQ sent (or the TCP connect under way), waiting for REP or REJ. */
    CONNECTING,
    /** Passive side: REQ received, waiting for the application's accept or reject. */
    CONNECT_REQUEST,
    /** Passive side: REP sent, waiting for RTU. */
    ACCEPTING,
    ESTABLISHED,
    /** DREQ sent, waiting for DREP. */
    DISCONNECTING,
    DISCONNECTED,
    /** How a connection attempt ended. */
    REJECTED, UNREACHABLE, CONNECT_ERROR,
    DEVICE_REMOVAL,
    DESTROYED
  }

  /**
   * The local ACK timeout the CM gives a connected QP, as the kernel's CM derives it for RoCE
   * (packet lifetime 16, plus one): 4.096 us * 2^17, about 0.54 s a try, so a peer that stops
   * answering fails the connection within (retryCount + 1) tries of it.
   */
  static final int ACK_TIMEOUT = 17;

  /** The access rdma_create_qp gives a QP on its way to INIT. */
  static final int QP_ACCESS =
      Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC;
  /**
   * The pause between DISCONNECTED and TIMEWAIT_EXIT. The IB CM waits for stray packets to die
   * out; the fabric here does not reorder across a closed connection, so a short one will do.
   */
  static final Duration TIMEWAIT = Duration.ofMillis(100);

  // errnos that event statuses carry, negated, as librdmacm reports them
  private static final int EPROTO = 71;
  private static final int ENETUNREACH = 101;
  private static final int ECONNRESET = 104;
  private static final int ETIMEDOUT = 110;
  private static final int EHOSTUNREACH = 113;
  private static final Logger log = LoggerFactory.getLogger(SoftCmId.class);

  final SoftCmEventChannel channel;
  private final SoftCmSupport support;
  private final CmResources resources;
  private final Object context;

  // guarded by this
  private State state = State.IDLE;
  /** Counts state changes: a deadline fires only if the id is still in the state that set it. */
  private long phase;
  private State beforeQuery;
  private DeviceContext verbs;
  private AutoCloseable removalWatch;
  private InetSocketAddress portHeld;
  private InetSocketAddress local;
  private InetSocketAddress remote;
  /** The bound socket: it holds the port, then carries the active side's connection. */
  private Socket socket;
  /** The connection (over TLS when it is on), once it is up. */
  private CmSocket conn;
  private CmListener listener;
  /** A DREQ after the disconnection is answered once; more are out of protocol. */
  private boolean answeredLateDreq;
  private QueuePair qp;
  private int psn;
  private ConnectionParameters ours;
  private CmMessage request;

  SoftCmId(SoftCmEventChannel channel, Object context) {
    this.channel = channel;
    this.support = channel.support;
    this.resources = support.cmResources();
    this.context = context;
  }

  @Override
  public Object context() {
    return context;
  }

  @Override
  public CmEventChannel channel() {
    return channel;
  }

  @Override
  public synchronized DeviceContext verbs() {
    return verbs;
  }

  @Override
  public synchronized int portNum() {
    return verbs != null ? 1 : 0;
  }

  @Override
  public synchronized InetSocketAddress localAddress() {
    return local;
  }

  @Override
  public synchronized InetSocketAddress remoteAddress() {
    return remote;
  }

  @Override
  public synchronized QueuePair qp() {
    return qp;
  }

  synchronized State state() {
    return state;
  }

  /** A listener's accepted connections whose REQ has not come yet (for tests). */
  synchronized int pendingHandshakes() {
    return listener == null ? 0 : listener.pending();
  }

  // ---- addresses and routes

  @Override
  public synchronized void bind(InetSocketAddress address) {
    String verb = "rdma_bind_addr";
    requireAddress(verb, "address", address);
    expect(verb, "IDLE", State.IDLE);
    if (!CmChecks.isLocal(address.getAddress())) {
      throw new RdmaException(verb, RdmaException.ENODEV, "no local interface has address "
          + address.getAddress().getHostAddress());
    }
    Socket s = bindSocket(verb, address);
    try {
      attach(address.getAddress());
    } catch (RuntimeException e) {
      unbind(s);
      throw e;
    }
    socket = s;
    local = portHeld;
    setState(State.ADDR_BOUND);
  }

  @Override
  public synchronized void listen(int backlog) {
    String verb = "rdma_listen";
    if (backlog < 0) {
      throw new RdmaException(verb, RdmaException.EINVAL, "backlog = " + backlog + " is negative");
    }
    expect(verb, "ADDR_BOUND (bind first)", State.ADDR_BOUND);
    ServerSocket ss = null;
    try {
      ss = new ServerSocket();
      ss.setReuseAddress(true);
      ss.bind(portHeld, backlog == 0 ? 128 : backlog);
    } catch (IOException e) {
      closeQuietly(ss);
      throw new RdmaException(verb, RdmaException.EADDRINUSE,
          "cannot listen on " + portHeld + ": " + e.getMessage(), e);
    }
    // the server socket holds the port now
    closeQuietly(socket);
    socket = null;
    setState(State.LISTEN);
    resources.warnIfInTheClear(portHeld.getAddress(), "listening on "
        + CmSocket.describe(portHeld));
    listener = new CmListener(this, ss, resources);
    listener.start();
  }

  @Override
  public synchronized void resolveAddress(
      InetSocketAddress source, InetSocketAddress destination, Duration timeout) {
    String verb = "rdma_resolve_addr";
    if (destination == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "destination is null");
    }
    if (destination.getPort() == 0) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "destination " + destination + " has port 0");
    }
    if (source != null) requireAddress(verb, "source", source);
    requireTimeout(verb, timeout);
    expect(verb, "IDLE or ADDR_BOUND", State.IDLE, State.ADDR_BOUND);
    beforeQuery = state;
    setState(State.ADDR_QUERY);
    long query = phase;
    CmChecks.daemon("soft-cm-resolve-" + destination.getPort(),
        () -> resolve(query, source, destination)).start();
    channel.schedule(() -> deadline(query), timeout);
  }

  /** Finds the route and source address as the kernel would, then takes a port there. */
  private void resolve(long query, InetSocketAddress source, InetSocketAddress destination) {
    InetAddress from;
    synchronized (this) {
      if (phase != query) return;
      from = beforeQuery == State.ADDR_BOUND ? portHeld.getAddress()
          : source != null ? source.getAddress() : null;
    }
    InetSocketAddress target;
    try {
      target = destination.isUnresolved()
          ? new InetSocketAddress(InetAddress.getByName(destination.getHostString()),
              destination.getPort())
          : destination;
    } catch (UnknownHostException e) {
      addressError(query, -EHOSTUNREACH);
      return;
    }
    InetAddress via;
    // connecting a datagram socket picks the route and source address; it sends nothing
    try (DatagramSocket probe = from == null || from.isAnyLocalAddress() ? new DatagramSocket()
        : new DatagramSocket(new InetSocketAddress(from, 0))) {
      probe.connect(target);
      via = probe.getLocalAddress();
    } catch (IOException | RuntimeException e) {
      addressError(query, -ENETUNREACH);
      return;
    }
    synchronized (this) {
      if (phase != query) return;
      if (beforeQuery == State.IDLE) {
        InetAddress ip = from == null || from.isAnyLocalAddress() ? via : from;
        Socket s;
        try {
          s = bindSocket("rdma_resolve_addr",
              new InetSocketAddress(ip, source == null ? 0 : source.getPort()));
        } catch (RdmaException e) {
          addressError(query, -e.errno());
          return;
        }
        try {
          attach(ip);
        } catch (RuntimeException e) {
          unbind(s);
          addressError(query, -RdmaException.ENODEV);
          return;
        }
        socket = s;
        local = portHeld;
      } else if (from.isAnyLocalAddress()) {
        local = new InetSocketAddress(via, portHeld.getPort());
      }
      remote = target;
      setState(State.ADDR_RESOLVED);
      post(CmEventType.ADDR_RESOLVED, 0, null, null);
    }
  }

  private synchronized void addressError(long query, int status) {
    if (phase != query) return;
    setState(beforeQuery);
    post(CmEventType.ADDR_ERROR, status, null, null);
  }

  @Override
  public synchronized void resolveRoute(Duration timeout) {
    String verb = "rdma_resolve_route";
    requireTimeout(verb, timeout);
    expect(verb, "ADDR_RESOLVED (resolve the address first)", State.ADDR_RESOLVED);
    setState(State.ROUTE_QUERY);
    long query = phase;
    channel.schedule(() -> route(query), Duration.ZERO);
  }

  private synchronized void route(long query) {
    if (phase != query) return;
    boolean up;
    try {
      up = support.portActive(verbs);
    } catch (RuntimeException e) {
      up = false;
    }
    if (up) {
      setState(State.ROUTE_RESOLVED);
      post(CmEventType.ROUTE_RESOLVED, 0, null, null);
    } else {
      // as in rdma_cm, the id falls back to ADDR_RESOLVED and may try again
      setState(State.ADDR_RESOLVED);
      post(CmEventType.ROUTE_ERROR, -ENETUNREACH, null, null);
    }
  }

  // ---- the QP

  @Override
  public synchronized QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes) {
    String verb = "rdma_create_qp";
    expect(verb, "ADDR_BOUND, ADDR_RESOLVED, ROUTE_RESOLVED or CONNECT_REQUEST", State.ADDR_BOUND,
        State.ADDR_RESOLVED, State.ROUTE_QUERY, State.ROUTE_RESOLVED, State.CONNECT_REQUEST);
    if (pd == null || attributes == null) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          (pd == null ? "pd" : "attributes") + " is null");
    }
    if (pd.context() != verbs) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the PD is on device context "
          + pd.context() + ", the id on " + verbs + "; allocate the PD from verbs()");
    }
    if (qp != null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the id already has QP " + qp.qpNum());
    }
    if (attributes.type() != QpType.RC) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "RDMA_PS_TCP ids connect RC QPs, not " + attributes.type());
    }
    QueuePair q = pd.createQp(attributes);
    try {
      q.modify(QpAttributes.toInit(1, QP_ACCESS));
    } catch (RuntimeException e) {
      q.close();
      throw e;
    }
    qp = q;
    return q;
  }

  @Override
  public synchronized void destroyQp() {
    String verb = "rdma_destroy_qp";
    if (qp == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the id (state " + state + ") has no QP");
    }
    qp.close();
    qp = null;
  }

  // ---- connecting

  @Override
  public synchronized void connect(ConnectionParameters parameters) {
    String verb = "rdma_connect";
    expect(verb, "ROUTE_RESOLVED (resolve address and route first)", State.ROUTE_RESOLVED);
    ours = CmChecks.checked(verb, parameters, ConnectionParameters.MAX_CONNECT_PRIVATE_DATA,
        verbs);
    requireQpInInit(verb);
    Socket s = socket;
    InetSocketAddress to = remote;
    // the thread takes this monitor before it looks at the state, so it sees CONNECTING
    if (!resources.start("soft-cm-conn-" + local.getPort() + "-" + to.getPort(),
        () -> runActive(s, to))) {
      throw new RdmaException(verb, RdmaException.EAGAIN, "cannot connect to "
          + CmSocket.describe(to) + ": " + resources.refusal());
    }
    psn = newPsn();
    setState(State.CONNECTING);
    resources.warnIfInTheClear(to.getAddress(), "connecting to " + CmSocket.describe(to));
    long attempt = phase;
    channel.schedule(() -> deadline(attempt), support.connectTimeout());
  }

  private void runActive(Socket s, InetSocketAddress to) {
    try {
      s.connect(to, millis(support.connectTimeout()));
      s.setTcpNoDelay(true);
    } catch (IOException e) {
      synchronized (this) {
        if (state != State.CONNECTING) return; // closed or timed out meanwhile
        if (e instanceof SocketTimeoutException) {
          end(State.UNREACHABLE, -ETIMEDOUT, null, null);
        } else if (e instanceof ConnectException && !String.valueOf(e.getMessage())
            .contains("timed out")) {
          // a TCP reset: nothing listens on the port, which the IB CM reports as this reason
          end(State.REJECTED, CmEvent.REJECT_NO_LISTENER, null, null);
        } else {
          end(State.UNREACHABLE, -EHOSTUNREACH, null, null);
        }
      }
      return;
    }
    String peer = CmSocket.describe(to);
    CmSocket c;
    try {
      c = CmSocket.over(resources.tls.client(s, "CM peer " + peer));
    } catch (IOException e) {
      synchronized (this) {
        if (state != State.CONNECTING) return; // the deadline or a close broke the handshake
        log.warn("soft CM: connecting to {} failed: {}", peer, e.getMessage());
        end(State.CONNECT_ERROR, e instanceof SSLException ? -EPROTO : -ECONNRESET, null, null);
      }
      return;
    }
    synchronized (this) {
      if (state != State.CONNECTING) {
        c.close();
        return;
      }
      conn = c;
      try {
        c.send(CmMessage.req(qp == null ? 0 : qp.qpNum(), psn, support.gid(verbs), activeMtu(),
            ours));
      } catch (IOException e) {
        end(State.CONNECT_ERROR, -ECONNRESET, null, null);
        return;
      }
    }
    readLoop(c);
  }

  /** The active side's REP: the QP goes to RTR and RTS, RTU goes back, and we are connected. */
  private boolean replied(CmMessage rep) {
    if (qp != null) {
      try {
        Mtu mtu = smaller(rep.mtu(), activeMtu());
        qp.modify(QpAttributes.toRtr(AddressVector.global(rep.gid(), 0, 1), rep.qpn(), rep.psn(),
            mtu).maxDestRdAtomic(ours.responderResources()));
        qp.modify(QpAttributes.toRts(psn).timeout(ACK_TIMEOUT).retryCount(ours.retryCount())
            .rnrRetry(rep.rnrRetryCount()).maxRdAtomic(ours.initiatorDepth()));
      } catch (RuntimeException e) {
        // librdmacm rejects the connection and reports CONNECT_ERROR with the modify's error
        trySend(CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, null));
        end(State.CONNECT_ERROR, -errnoOf(e), null, null);
        return false;
      }
    }
    try {
      conn.send(CmMessage.bare(CmMessage.Kind.RTU));
    } catch (IOException e) {
      end(State.CONNECT_ERROR, -ECONNRESET, null, null);
      return false;
    }
    setState(State.ESTABLISHED);
    post(CmEventType.ESTABLISHED, 0, rep.privateData(), rep.asSeenByReceiver());
    return true;
  }

  // ---- the passive side (CmListener accepts and reads the REQ)

  /** The new id for a request, posted as CONNECT_REQUEST; null when no longer listening. */
  synchronized SoftCmId offer(CmSocket c, CmMessage req) {
    if (state != State.LISTEN) return null;
    SoftCmId id;
    try {
      id = channel.newId(context, "rdma_listen");
    } catch (RdmaException e) {
      return null; // the channel closed
    }
    try {
      id.adopt(c, req);
    } catch (RuntimeException e) {
      id.close();
      return null;
    }
    // the listener's lock orders this after any close of the listener has purged its requests
    channel.post(new CmEvent(CmEventType.CONNECT_REQUEST, id, this, 0, req.privateData().clone(),
        req.asSeenByReceiver()));
    return id;
  }

  private synchronized void adopt(CmSocket c, CmMessage req) {
    conn = c;
    local = (InetSocketAddress) c.socket.getLocalSocketAddress();
    remote = (InetSocketAddress) c.socket.getRemoteSocketAddress();
    request = req;
    attach(c.socket.getLocalAddress());
    setState(State.CONNECT_REQUEST);
  }

  @Override
  public synchronized void accept(ConnectionParameters parameters) {
    String verb = "rdma_accept";
    expect(verb, "CONNECT_REQUEST (only a connection request's id can be accepted)",
        State.CONNECT_REQUEST);
    ConnectionParameters p = CmChecks.checked(verb, parameters,
        ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA, verbs);
    requireQpInInit(verb);
    Mtu mtu = smaller(request.mtu(), activeMtu());
    if (qp != null) {
      try {
        qp.modify(QpAttributes.toRtr(AddressVector.global(request.gid(), 0, 1), request.qpn(),
            request.psn(), mtu).maxDestRdAtomic(p.responderResources()));
      } catch (RuntimeException e) {
        throw new RdmaException(verb, errnoOf(e),
            "moving QP " + qp.qpNum() + " to RTR failed: " + e.getMessage(), e);
      }
    }
    ours = p;
    psn = newPsn();
    try {
      conn.send(CmMessage.rep(qp == null ? 0 : qp.qpNum(), psn, support.gid(verbs), mtu, p));
    } catch (IOException e) {
      end(State.CONNECT_ERROR, -ECONNRESET, null, null);
      return;
    }
    setState(State.ACCEPTING);
    long attempt = phase;
    channel.schedule(() -> deadline(attempt), support.connectTimeout());
  }

  /** The passive side's RTU: the QP goes to RTS and we are connected. */
  private boolean readyToUse() {
    if (qp != null) {
      try {
        qp.modify(QpAttributes.toRts(psn).timeout(ACK_TIMEOUT).retryCount(request.retryCount())
            .rnrRetry(request.rnrRetryCount()).maxRdAtomic(ours.initiatorDepth()));
      } catch (RuntimeException e) {
        end(State.CONNECT_ERROR, -errnoOf(e), null, null);
        return false;
      }
    }
    setState(State.ESTABLISHED);
    post(CmEventType.ESTABLISHED, 0, null, null);
    return true;
  }

  @Override
  public synchronized void reject(byte[] privateData) {
    String verb = "rdma_reject";
    expect(verb, "CONNECT_REQUEST (only a connection request's id can be rejected)",
        State.CONNECT_REQUEST);
    byte[] data = privateData == null ? new byte[0] : privateData.clone();
    if (data.length > ConnectionParameters.MAX_REJECT_PRIVATE_DATA) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length
          + " bytes of private data; a reject carries at most "
          + ConnectionParameters.MAX_REJECT_PRIVATE_DATA);
    }
    setState(State.REJECTED);
    try {
      conn.send(CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, data));
      // the requester closes on REJ; closing first could reset the REJ away
      conn.shutdownOutput();
    } catch (IOException e) {
      closeSocket(); // the requester is gone already
    }
  }

  // ---- disconnecting

  @Override
  public synchronized void disconnect() {
    String verb = "rdma_disconnect";
    if (state == State.DISCONNECTING || state == State.DISCONNECTED) {
      // the kernel's rdma_disconnect ignores a DREQ/DREP it cannot send: a second call, or one
      // after the peer left, succeeds, so applications may call it unconditionally at teardown
      flushQp();
      return;
    }
    expect(verb, "ESTABLISHED", State.ESTABLISHED);
    flushQp(); // as rdma_disconnect does, before it sends DREQ
    setState(State.DISCONNECTING);
    try {
      conn.send(CmMessage.bare(CmMessage.Kind.DREQ));
    } catch (IOException e) {
      disconnected();
      return;
    }
    long attempt = phase;
    channel.schedule(() -> deadline(attempt), support.connectTimeout());
  }

  private void disconnected() {
    setState(State.DISCONNECTED);
    flushQp();
    post(CmEventType.DISCONNECTED, 0, null, null);
    long after = phase;
    channel.schedule(() -> {
      synchronized (this) {
        if (phase == after) post(CmEventType.TIMEWAIT_EXIT, 0, null, null);
      }
    }, TIMEWAIT);
  }

  /** Moves the QP to ERR, which flushes its outstanding work requests. */
  private void flushQp() {
    if (qp == null) return;
    try {
      qp.modify(new QpAttributes().state(QpState.ERR));
    } catch (RuntimeException e) {
      // a QP whose device died is in ERR already
    }
  }

  // ---- the connection's messages

  /** Reads the connection's frames until it ends; the connection's thread runs it. */
  void readLoop(CmSocket c) {
    try {
      while (received(c.read())) {
        // next message
      }
    } catch (IOException e) {
      lost(c, e);
    } catch (RuntimeException e) {
      // a fault of ours; the application still hears that the connection is gone
      log.error("soft CM {}: reading the connection from {} failed", CmSocket.describe(local),
          c.peer, e);
      lost(c, new IOException(e.toString(), e));
    } finally {
      c.close();
    }
  }

  /**
   * Handles one message; false when the conversation is over. A message the state does not
   * expect is a ProtocolException: the peer broke the protocol.
   */
  private synchronized boolean received(CmMessage m) throws ProtocolException {
    CmMessage.Kind k = m.kind();
    switch (state) {
      case CONNECTING:
        if (k == CmMessage.Kind.REP) return replied(m);
        if (k == CmMessage.Kind.REJ) {
          end(State.REJECTED, m.reason(), m.privateData(), null);
          return false;
        }
        break;
      case CONNECT_REQUEST:
      case ACCEPTING:
        if (k == CmMessage.Kind.RTU && state == State.ACCEPTING) return readyToUse();
        if (k == CmMessage.Kind.REJ) { // the requester gave up or could not use our REP
          end(State.REJECTED, m.reason(), m.privateData(), null);
          return false;
        }
        break;
      case ESTABLISHED:
        if (k == CmMessage.Kind.DREQ) {
          trySend(CmMessage.bare(CmMessage.Kind.DREP));
          disconnected();
          return true; // the requester closes on DREP
        }
        break;
      case DISCONNECTING:
        if (k == CmMessage.Kind.DREQ) { // both sides disconnected at once
          trySend(CmMessage.bare(CmMessage.Kind.DREP));
          disconnected();
          return true;
        }
        if (k == CmMessage.Kind.DREP) {
          disconnected();
          return false;
        }
        break;
      case DISCONNECTED:
        if (k == CmMessage.Kind.DREP) return false; // both sides disconnected at once
        if (k == CmMessage.Kind.DREQ && !answeredLateDreq) {
          // one more DREQ is answered, as the IB CM answers a repeated one; an endless stream
          // of them would have us write to a peer that need not read
          answeredLateDreq = true;
          trySend(CmMessage.bare(CmMessage.Kind.DREP));
          return true;
        }
        break;
      default:
        return false; // the connection is over for this id
    }
    throw new ProtocolException("unexpected " + k + " in state " + state);
  }

  /**
   * The TCP connection broke or the peer broke the protocol (or TLS): the peer is gone. What
   * the peer did wrong is logged; a connection that simply ends is an event, not a warning.
   */
  private synchronized void lost(CmSocket c, IOException e) {
    boolean live = state == State.CONNECTING || state == State.CONNECT_REQUEST
        || state == State.ACCEPTING || state == State.ESTABLISHED
        || state == State.DISCONNECTING;
    if (e instanceof ProtocolException && state != State.DESTROYED) {
      log.warn("soft CM {}: refused a frame from {}: {}; the connection ends",
          CmSocket.describe(local), c.peer, e.getMessage());
    } else if (e instanceof SSLException && live) {
      log.warn("soft CM {}: TLS with {} failed: {}; the connection ends",
          CmSocket.describe(local), c.peer, e.getMessage());
    }
    switch (state) {
      case CONNECTING:
      case CONNECT_REQUEST:
      case ACCEPTING:
        end(State.CONNECT_ERROR, e instanceof ProtocolException || e instanceof SSLException
            ? -EPROTO : -ECONNRESET, null, null);
        break;
      case ESTABLISHED:
      case DISCONNECTING:
        closeSocket();
        disconnected();
        break;
      default:
        break;
    }
  }

  /** A deadline set in an earlier phase: fires only if the id never left that phase. */
  private synchronized void deadline(long setInPhase) {
    if (phase != setInPhase) return;
    switch (state) {
      case ADDR_QUERY:
        setState(beforeQuery);
        post(CmEventType.ADDR_ERROR, -ETIMEDOUT, null, null);
        break;
      case CONNECTING:
        trySend(CmMessage.rej(CmMessage.REJECT_TIMEOUT, null));
        end(State.UNREACHABLE, -ETIMEDOUT, null, null);
        break;
      case ACCEPTING:
        end(State.UNREACHABLE, -ETIMEDOUT, null, null);
        break;
      case DISCONNECTING: // no DREP: the peer is as good as gone
        closeSocket();
        disconnected();
        break;
      default:
        break;
    }
  }

  /** Ends a connection attempt in {@code how}, with its event. */
  private void end(State how, int status, byte[] privateData, ConnectionParameters p) {
    setState(how);
    closeSocket();
    CmEventType type = how == State.REJECTED ? CmEventType.REJECTED
        : how == State.UNREACHABLE ? CmEventType.UNREACHABLE : CmEventType.CONNECT_ERROR;
    post(type, status, privateData, p);
  }

  /**
   * Drops the TCP connection with a reset and without a DREQ, as a process that dies would; this
   * id reports nothing more about it. For tests that need a vanishing peer.
   */
  synchronized void drop() {
    setState(State.DISCONNECTED);
    if (conn != null) conn.reset();
    closeSocket();
  }

  // ---- device removal and destruction

  private void deviceRemoved() {
    synchronized (this) {
      if (state == State.DESTROYED || state == State.DEVICE_REMOVAL) return;
      setState(State.DEVICE_REMOVAL);
      // a listener stops answering; a connection stays until the application destroys the id,
      // as it must on DEVICE_REMOVAL, and the peer hears of it then (as with rdma_cm)
      stopListening();
      post(CmEventType.DEVICE_REMOVAL, 0, null, null);
    }
  }

  /** Destroys the id and its QP, swallowing errors: the provider is closing. */
  void destroyForShutdown() {
    synchronized (this) {
      if (qp != null) {
        try {
          qp.close();
        } catch (RuntimeException e) {
          // going away regardless
        }
        qp = null;
      }
    }
    try {
      close();
    } catch (RuntimeException e) {
      // going away regardless
    }
  }

  @Override
  public void close() {
    DeviceContext context;
    AutoCloseable watch;
    synchronized (this) {
      if (state == State.DESTROYED) return;
      if (qp != null) {
        throw new RdmaException("rdma_destroy_id", RdmaException.EBUSY, "the id in state " + state
            + " still has QP " + qp.qpNum() + "; destroy it first (destroyQp)");
      }
      // what the IB CM sends when an id goes away mid-conversation
      switch (state) {
        case CONNECTING:
        case CONNECT_REQUEST:
          trySend(CmMessage.rej(CmMessage.REJECT_TIMEOUT, null));
          break;
        case ACCEPTING:
          trySend(CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, null));
          break;
        case ESTABLISHED:
          trySend(CmMessage.bare(CmMessage.Kind.DREQ));
          break;
        default:
          break;
      }
      setState(State.DESTROYED);
      closeSocket();
      stopListening();
      if (portHeld != null) PortSpace.release(portHeld);
      context = verbs;
      watch = removalWatch;
      verbs = null;
      removalWatch = null;
    }
    if (watch != null) {
      try {
        watch.close();
      } catch (Exception e) {
        // the device is gone; nothing left to stop
      }
    }
    // the id is gone even if giving back its context fails: report that after the bookkeeping
    RuntimeException failure = null;
    try {
      if (context != null) support.releaseContext(context);
    } catch (RuntimeException e) {
      failure = e;
    }
    for (SoftCmId id : channel.forget(this)) {
      try {
        id.close();
      } catch (RuntimeException e) {
        if (failure == null) failure = e;
        else failure.addSuppressed(e);
      }
    }
    support.countCmId(-1);
    if (failure != null) throw failure;
  }

  // ---- helpers (callers hold the monitor where state is touched)

  private void setState(State s) {
    state = s;
    phase++;
  }

  private void post(CmEventType type, int status, byte[] privateData,
      ConnectionParameters parameters) {
    channel.post(new CmEvent(type, this, null, status,
        privateData == null ? new byte[0] : privateData.clone(), parameters));
  }

  private void expect(String verb, String needed, State... allowed) {
    if (state == State.DESTROYED) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the id is destroyed (state DESTROYED)");
    }
    if (Arrays.asList(allowed).contains(state)) return;
    throw new RdmaException(verb, RdmaException.EINVAL,
        "the id is in state " + state + "; " + verb + " needs " + needed);
  }

  private void requireQpInInit(String verb) {
    if (qp != null && qp.state() != QpState.INIT) {
      throw new RdmaException(verb, RdmaException.EINVAL, "QP " + qp.qpNum() + " is in "
          + qp.state() + "; the CM moves it on from INIT (leave it as rdma_create_qp made it)");
    }
  }

  /** Binds a socket for the id's port and takes the port in the CM's port space. */
  private Socket bindSocket(String verb, InetSocketAddress address) {
    Socket s = PortSpace.bind(verb, address);
    portHeld = new InetSocketAddress(address.getAddress(), s.getLocalPort());
    return s;
  }

  private void unbind(Socket s) {
    closeQuietly(s);
    PortSpace.release(portHeld);
    portHeld = null;
  }

  /** Takes the device context serving {@code address} and watches for its removal. */
  private void attach(InetAddress address) {
    DeviceContext ctx = support.acquireContext(address);
    try {
      // the provider may call back holding its own locks: hand the work to the channel's thread
      removalWatch = support.onDeviceRemoval(ctx,
          () -> channel.schedule(this::deviceRemoved, Duration.ZERO));
    } catch (RuntimeException e) {
      support.releaseContext(ctx);
      throw e;
    }
    verbs = ctx;
  }

  private Mtu activeMtu() {
    return verbs.queryPort(1).activeMtu();
  }

  private void trySend(CmMessage m) {
    if (conn != null) conn.trySend(m); // a peer that is gone shows when the connection is read
  }

  private void closeSocket() {
    closeQuietly(conn);
    closeQuietly(socket);
  }

  private void stopListening() {
    CmListener l = listener;
    listener = null;
    if (l != null) l.stop();
  }

  @Override
  public synchronized String toString() {
    return "CmId(" + (local != null ? local : "unbound") + (remote != null ? " -> " + remote : "")
        + ", " + state + ")";
  }
}
