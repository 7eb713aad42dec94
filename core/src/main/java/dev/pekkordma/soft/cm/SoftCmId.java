package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.soft.SoftCmSupport;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A CM id of the software provider ({@code rdma_cm_id} with RDMA_PS_TCP). Its address is a real
 * TCP address: a listener is a server socket, and a connection is a TCP connection that carries
 * the IB CM's handshake (REQ, REP, RTU, REJ, DREQ, DREP) while the QPs it connects talk through
 * the provider's fabric. The TCP connection also stands for the peer being alive: when it breaks,
 * the peer is gone.
 *
 * <p>State lives under the id's monitor. Each connection has one thread reading its messages, a
 * listener one thread accepting; deadlines and short steps run on the channel's thread.
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

  private final SoftCmEventChannel channel;
  private final SoftCmSupport support;
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
  private Socket socket;
  private DataOutputStream out;
  private ServerSocket server;
  private Thread acceptor; // the listener's accept loop
  private QueuePair qp;
  private int psn;
  private ConnectionParameters ours;
  private CmMessage request;

  SoftCmId(SoftCmEventChannel channel, Object context) {
    this.channel = channel;
    this.support = channel.support;
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

  // ---- addresses and routes

  @Override
  public synchronized void bind(InetSocketAddress address) {
    String verb = "rdma_bind_addr";
    requireAddress(verb, "address", address);
    expect(verb, "IDLE", State.IDLE);
    if (!isLocal(address.getAddress())) {
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
    server = ss;
    setState(State.LISTEN);
    ServerSocket listening = ss;
    acceptor = daemon("soft-cm-listener-" + portHeld.getPort(), () -> acceptLoop(listening));
    acceptor.start();
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
    daemon("soft-cm-resolve-" + destination.getPort(),
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
    ours = checked(verb, parameters, ConnectionParameters.MAX_CONNECT_PRIVATE_DATA);
    requireQpInInit(verb);
    psn = newPsn();
    setState(State.CONNECTING);
    long attempt = phase;
    Socket s = socket;
    daemon("soft-cm-conn-" + local.getPort() + "-" + remote.getPort(), () -> runActive(s))
        .start();
    channel.schedule(() -> deadline(attempt), support.connectTimeout());
  }

  private void runActive(Socket s) {
    try {
      s.connect(remoteAddress(), millis(support.connectTimeout()));
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
    DataInputStream in;
    synchronized (this) {
      if (state != State.CONNECTING) return;
      try {
        in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
        CmMessage.req(qp == null ? 0 : qp.qpNum(), psn, support.gid(verbs), activeMtu(), ours)
            .writeTo(out);
      } catch (IOException e) {
        end(State.CONNECT_ERROR, -ECONNRESET, null, null);
        return;
      }
    }
    readLoop(s, in);
  }

  /** The active side's REP: the QP goes to RTR and RTS, RTU goes back, and we are connected. */
  private boolean replied(CmMessage rep) {
    if (qp != null) {
      try {
        Mtu mtu = smaller(rep.mtu(), activeMtu());
        qp.modify(QpAttributes.toRtr(AddressVector.global(rep.gid(), 0, 1), rep.qpn(), rep.psn(),
            mtu).maxDestRdAtomic(ours.responderResources()));
        qp.modify(QpAttributes.toRts(psn).retryCount(ours.retryCount())
            .rnrRetry(rep.rnrRetryCount()).maxRdAtomic(ours.initiatorDepth()));
      } catch (RuntimeException e) {
        // librdmacm rejects the connection and reports CONNECT_ERROR with the modify's error
        trySend(CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, null));
        end(State.CONNECT_ERROR, -errnoOf(e), null, null);
        return false;
      }
    }
    try {
      CmMessage.bare(CmMessage.Kind.RTU).writeTo(out);
    } catch (IOException e) {
      end(State.CONNECT_ERROR, -ECONNRESET, null, null);
      return false;
    }
    setState(State.ESTABLISHED);
    post(CmEventType.ESTABLISHED, 0, rep.privateData(), rep.asSeenByReceiver());
    return true;
  }

  // ---- the passive side

  private void acceptLoop(ServerSocket listening) {
    while (true) {
      Socket s;
      try {
        s = listening.accept();
      } catch (IOException e) {
        return; // closed with the id or its device
      }
      if (listening.isClosed()) { // accepted while the close was under way: refuse it
        closeQuietly(s);
        return;
      }
      daemon("soft-cm-conn-" + s.getLocalPort() + "-" + s.getPort(), () -> serve(s)).start();
    }
  }

  /** Reads a new connection's REQ and hands it to the application as a new id. */
  private void serve(Socket s) {
    DataInputStream in;
    CmMessage req;
    try {
      s.setTcpNoDelay(true);
      s.setSoTimeout(millis(support.connectTimeout()));
      in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
      req = CmMessage.readFrom(in);
      if (req.kind() != CmMessage.Kind.REQ) {
        throw new ProtocolException("expected REQ, got " + req.kind());
      }
      s.setSoTimeout(0);
    } catch (IOException e) {
      closeQuietly(s); // no id exists for it yet, so there is nobody to tell
      return;
    }
    SoftCmId id = offer(s, req);
    if (id == null) {
      try {
        CmMessage.rej(CmEvent.REJECT_NO_LISTENER, null)
            .writeTo(new DataOutputStream(s.getOutputStream()));
      } catch (IOException e) {
        // the requester is gone too
      }
      closeQuietly(s);
      return;
    }
    id.readLoop(s, in);
  }

  /** The new id for a request, posted as CONNECT_REQUEST; null when no longer listening. */
  private synchronized SoftCmId offer(Socket s, CmMessage req) {
    if (state != State.LISTEN) return null;
    SoftCmId id = channel.newId(context, "rdma_listen");
    try {
      id.adopt(s, req);
    } catch (IOException | RuntimeException e) {
      id.close();
      return null;
    }
    // the listener's lock orders this after any close of the listener has purged its requests
    channel.post(new CmEvent(CmEventType.CONNECT_REQUEST, id, this, 0, req.privateData().clone(),
        req.asSeenByReceiver()));
    return id;
  }

  private synchronized void adopt(Socket s, CmMessage req) throws IOException {
    out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
    socket = s;
    local = (InetSocketAddress) s.getLocalSocketAddress();
    remote = (InetSocketAddress) s.getRemoteSocketAddress();
    request = req;
    attach(s.getLocalAddress());
    setState(State.CONNECT_REQUEST);
  }

  @Override
  public synchronized void accept(ConnectionParameters parameters) {
    String verb = "rdma_accept";
    expect(verb, "CONNECT_REQUEST (only a connection request's id can be accepted)",
        State.CONNECT_REQUEST);
    ConnectionParameters p =
        checked(verb, parameters, ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA);
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
      CmMessage.rep(qp == null ? 0 : qp.qpNum(), psn, support.gid(verbs), mtu, p).writeTo(out);
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
        qp.modify(QpAttributes.toRts(psn).retryCount(request.retryCount())
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
      CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, data).writeTo(out);
      // the requester closes on REJ; closing first could reset the REJ away
      socket.shutdownOutput();
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
      CmMessage.bare(CmMessage.Kind.DREQ).writeTo(out);
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

  private void readLoop(Socket s, DataInputStream in) {
    try {
      while (received(CmMessage.readFrom(in))) {
        // next message
      }
    } catch (IOException e) {
      lost(e);
    } finally {
      closeQuietly(s);
    }
  }

  /** Handles one message; false when the conversation is over. */
  private synchronized boolean received(CmMessage m) {
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
        if (k == CmMessage.Kind.DREQ) trySend(CmMessage.bare(CmMessage.Kind.DREP));
        return k == CmMessage.Kind.DREQ;
      default:
        return false; // the connection is over for this id
    }
    lost(new ProtocolException("unexpected " + k + " in state " + state));
    return false;
  }

  /** The TCP connection broke or the peer broke the protocol: the peer is gone. */
  private synchronized void lost(IOException e) {
    switch (state) {
      case CONNECTING:
      case CONNECT_REQUEST:
      case ACCEPTING:
        end(State.CONNECT_ERROR, e instanceof ProtocolException ? -EPROTO : -ECONNRESET, null,
            null);
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
    if (socket != null) {
      try {
        socket.setSoLinger(true, 0);
      } catch (SocketException e) {
        // closed already
      }
    }
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

  private static void requireAddress(String verb, String what, InetSocketAddress a) {
    if (a == null) throw new RdmaException(verb, RdmaException.EINVAL, what + " is null");
    if (a.isUnresolved()) {
      throw new RdmaException(verb, RdmaException.EINVAL, what + " " + a + " is unresolved");
    }
  }

  private static void requireTimeout(String verb, Duration timeout) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new RdmaException(verb, RdmaException.EINVAL, "timeout must be positive, was "
          + timeout);
    }
  }

  private void requireQpInInit(String verb) {
    if (qp != null && qp.state() != QpState.INIT) {
      throw new RdmaException(verb, RdmaException.EINVAL, "QP " + qp.qpNum() + " is in "
          + qp.state() + "; the CM moves it on from INIT (leave it as rdma_create_qp made it)");
    }
  }

  /** Checks parameters against librdmacm's and the device's limits; returns a private copy. */
  private ConnectionParameters checked(String verb, ConnectionParameters p, int maxPrivateData) {
    if (p == null) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "connection parameters are null (ConnectionParameters.defaults() has none to say)");
    }
    byte[] data = p.privateDataOrEmpty();
    if (data.length > maxPrivateData) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length
          + " bytes of private data; at most " + maxPrivateData);
    }
    DeviceAttributes dev = verbs.queryDevice();
    range(verb, "responderResources", p.responderResources(), dev.maxQpRdAtom(),
        "the device's max_qp_rd_atom");
    range(verb, "initiatorDepth", p.initiatorDepth(), dev.maxQpInitRdAtom(),
        "the device's max_qp_init_rd_atom");
    range(verb, "retryCount", p.retryCount(), 7, "3 bits");
    range(verb, "rnrRetryCount", p.rnrRetryCount(), 7, "3 bits");
    return new ConnectionParameters(data.clone(), p.responderResources(), p.initiatorDepth(),
        p.retryCount(), p.rnrRetryCount());
  }

  private static void range(String verb, String name, int value, int max, String why) {
    if (value < 0 || value > max) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          name + " = " + value + " is outside [0, " + max + "] (" + why + ")");
    }
  }

  /** Binds a socket for the id's port and takes the port in the CM's port space. */
  private Socket bindSocket(String verb, InetSocketAddress address) {
    Socket s = new Socket();
    try {
      s.setReuseAddress(true); // so that listen can open a server socket on the port later
      s.bind(address);
    } catch (IOException e) {
      closeQuietly(s);
      throw new RdmaException(verb, RdmaException.EADDRINUSE,
          address + " is in use: " + e.getMessage(), e);
    }
    InetSocketAddress bound = new InetSocketAddress(address.getAddress(), s.getLocalPort());
    InetSocketAddress holder = PortSpace.take(bound);
    if (holder != null) {
      closeQuietly(s);
      throw new RdmaException(verb, RdmaException.EADDRINUSE,
          bound + " is in use: a CM id holds " + holder);
    }
    portHeld = bound;
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

  private static boolean isLocal(InetAddress a) {
    if (a.isAnyLocalAddress() || a.isLoopbackAddress()) return true;
    try {
      return NetworkInterface.getByInetAddress(a) != null;
    } catch (SocketException e) {
      return false;
    }
  }

  private Mtu activeMtu() {
    return verbs.queryPort(1).activeMtu();
  }

  private static Mtu smaller(Mtu a, Mtu b) {
    return a.bytes <= b.bytes ? a : b;
  }

  private static int newPsn() {
    return ThreadLocalRandom.current().nextInt(1 << 24);
  }

  private static int errnoOf(RuntimeException e) {
    return e instanceof RdmaException && ((RdmaException) e).errno() != 0
        ? ((RdmaException) e).errno() : RdmaException.EINVAL;
  }

  private static int millis(Duration d) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
  }

  private void trySend(CmMessage m) {
    if (out == null) return;
    try {
      m.writeTo(out);
    } catch (IOException e) {
      // the peer is gone; what follows reports it
    }
  }

  private void closeSocket() {
    closeQuietly(socket);
  }

  private static void closeQuietly(AutoCloseable c) {
    if (c == null) return;
    try {
      c.close();
    } catch (Exception e) {
      // closing is all we wanted
    }
  }

  /**
   * Closes the listening socket and waits for the accept thread to leave: a thread blocked in
   * accept() keeps the socket listening until the JDK has woken it, so without the wait the port
   * can still answer after close() returned.
   */
  private void stopListening() {
    closeQuietly(server);
    server = null;
    Thread t = acceptor;
    acceptor = null;
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static Thread daemon(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    return t;
  }

  @Override
  public synchronized String toString() {
    return "CmId(" + (local != null ? local : "unbound") + (remote != null ? " -> " + remote : "")
        + ", " + state + ")";
  }
}
