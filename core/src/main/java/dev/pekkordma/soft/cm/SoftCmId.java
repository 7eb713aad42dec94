package dev.pekkordma.soft.cm;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import static dev.pekkordma.soft.cm.CmChecks.errnoOf;
import static dev.pekkordma.soft.cm.CmChecks.newPsn;
import static dev.pekkordma.soft.cm.CmChecks.requireAddress;
import static dev.pekkordma.soft.cm.CmChecks.smaller;
import static dev.pekkordma.soft.cm.CmSocket.closeQuietly;
import static dev.pekkordma.verbs.RdmaException.ETIMEDOUT;

/**
 * A CM id of the software provider ({@code rdma_cm_id} with RDMA_PS_TCP). A listener's address is
 * a real TCP address (a server socket); a connection is a conversation on a {@link CmLink}, the
 * TCP connection that carries the IB CM's handshake (REQ, REP, RTU, REJ, DREQ, DREP) for every
 * connection between the two processes, while the QPs it connects talk through the provider's
 * fabric. The link also stands for the peer being alive: when it breaks, the peer is gone.
 *
 * <p>CmState lives under the id's monitor. A link's thread hands the id its messages
 * ({@link CmConversation}), a listener's thread accepts links ({@link CmListener}); deadlines and
 * short steps run on the channel's thread. Every frame a peer sends is checked before it is
 * acted on; one out of place ends the connection, logged.
 */
@InternalApi
public final class SoftCmId extends AbstractSoftCmId {
  /**
   * The pause between DISCONNECTED and TIMEWAIT_EXIT. The IB CM waits for stray packets to die
   * out; the fabric here does not reorder across a closed connection, so a short one will do.
   */
  static final Duration TIMEWAIT = Duration.ofMillis(100);

  private static final Logger log = LoggerFactory.getLogger(SoftCmId.class);

  // guarded by this
  private InetSocketAddress portHeld;
  /** rdma_bind_addr's socket: it holds the port in this host's port space, for a listen. */
  private Socket socket;
  /** The connection's place on its link. */
  private final CmConversation handler = new CmConversation(this);
  private CmListener listener;
  /** A DREQ after the disconnection is answered once; more are out of protocol. */
  boolean answeredLateDreq;
  int psn;
  ConnectionParameters ours;
  private CmMessage request;

  SoftCmId(SoftCmEventChannel channel, Object context) {
    super(channel, context);
  }

  @Override
  public RdmaPortSpace portSpace() {
    return RdmaPortSpace.TCP;
  }

  @Override
  public void joinMulticast(InetSocketAddress group) {
    throw new RdmaException("rdma_join_multicast", RdmaException.EINVAL,
        "an RDMA_PS_TCP id cannot join a multicast group (" + group + "): datagram ids only");
  }

  @Override
  public void leaveMulticast(InetSocketAddress group) {
    throw new RdmaException("rdma_leave_multicast", RdmaException.EINVAL,
        "an RDMA_PS_TCP id joins no multicast group (" + group + ")");
  }

  /** A listener's accepted connections whose REQ has not come yet (for tests). */
  synchronized int pendingHandshakes() {
    return listener == null ? 0 : listener.pending();
  }

  // ---- addresses and routes

  @Override
  public synchronized void bind(InetSocketAddress address) {
    String verb = "rdma_bind_addr";
    checkBindable(verb, address);
    Socket s = bindSocket(verb, address);
    try {
      attach(address.getAddress());
    } catch (RuntimeException e) {
      unbind(s);
      throw e;
    }
    socket = s;
    local = portHeld;
    setState(CmState.ADDR_BOUND);
  }

  @Override
  public synchronized void listen(int backlog) {
    String verb = "rdma_listen";
    if (backlog < 0) {
      throw new RdmaException(verb, RdmaException.EINVAL, "backlog = " + backlog + " is negative");
    }
    expect(verb, "ADDR_BOUND (bind first)", CmState.ADDR_BOUND);
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
    setState(CmState.LISTEN);
    resources.warnIfInTheClear(portHeld.getAddress(), "listening on "
        + CmSocket.describe(portHeld));
    listener = new CmListener(this, ss, resources);
    listener.start();
  }

  @Override
  InetSocketAddress takePort(InetAddress ip, int port) {
    portHeld = PortSpace.allocate("rdma_resolve_addr", new InetSocketAddress(ip, port));
    try {
      attach(ip);
    } catch (RuntimeException e) {
      PortSpace.release(portHeld);
      portHeld = null;
      throw e;
    }
    return portHeld;
  }

  // ---- the QP

  @Override
  public synchronized QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes) {
    String verb = "rdma_create_qp";
    expect(verb, "ADDR_BOUND, ADDR_RESOLVED, ROUTE_RESOLVED or CONNECT_REQUEST", CmState.ADDR_BOUND,
        CmState.ADDR_RESOLVED, CmState.ROUTE_QUERY, CmState.ROUTE_RESOLVED, CmState.CONNECT_REQUEST);
    qp = CmQpSteps.create(verb, RdmaPortSpace.TCP, pd, attributes, device.verbs, qp);
    return qp;
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

  /** The peer's CM link opens now, while the application resolves the route and sets up its QP. */
  @Override
  void addressResolved() {
    handler.prepare(local.getAddress(), remote);
  }

  @Override
  public synchronized void connect(ConnectionParameters parameters) {
    String verb = "rdma_connect";
    expect(verb, "ROUTE_RESOLVED (resolve address and route first)", CmState.ROUTE_RESOLVED);
    ours = CmChecks.checked(verb, parameters, ConnectionParameters.MAX_CONNECT_PRIVATE_DATA,
        device.verbs);
    CmQpSteps.requireInit(verb, qp);
    InetSocketAddress to = remote;
    boolean up = handler.join(verb, local.getAddress(), to);
    psn = newPsn();
    setState(CmState.CONNECTING);
    resources.warnIfInTheClear(to.getAddress(), "connecting to " + CmSocket.describe(to));
    long attempt = phase;
    inThisPhase(() -> deadline(attempt), support.connectTimeout());
    if (up) linkUp();
  }

  /** The link is up: the REQ goes out, once. */
  synchronized void linkUp() {
    if (state != CmState.CONNECTING || !handler.requestDue()) return;
    handler.request(CmMessage.req(qp == null ? 0 : qp.qpNum(), psn, support.gid(device.verbs),
        activeMtu(), ours, local.getPort()));
  }

  /** The active side's REP: the QP goes to RTR and RTS, RTU goes back, and we are connected. */
  boolean replied(CmMessage rep) {
    if (qp != null) {
      try {
        CmQpSteps.toRtr(qp, rep, smaller(rep.mtu(), activeMtu()), ours.responderResources());
        CmQpSteps.toRts(qp, psn, ours.retryCount(), rep.rnrRetryCount(), ours.initiatorDepth());
      } catch (RuntimeException e) {
        // librdmacm rejects the connection and reports CONNECT_ERROR with the modify's error
        trySend(CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, null));
        end(CmState.CONNECT_ERROR, -errnoOf(e), null, null);
        return false;
      }
    }
    trySend(CmMessage.bare(CmMessage.Kind.RTU));
    setState(CmState.ESTABLISHED);
    post(CmEventType.ESTABLISHED, 0, rep.privateData(), rep.asSeenByReceiver());
    return true;
  }

  // ---- the passive side (CmListener accepts and reads the REQ)

  /**
   * The new id for a request, conversation {@code n} on {@code link}, posted as CONNECT_REQUEST;
   * null when no longer listening or past {@value CmResources#MAX_CONNECTIONS}.
   */
  synchronized SoftCmId offer(CmLink link, int n, CmMessage req) {
    if (state != CmState.LISTEN) return null;
    if (!resources.openConversation()) return null;
    SoftCmId id;
    try {
      id = channel.newId(context(), "rdma_listen");
    } catch (RdmaException e) {
      resources.closeConversation();
      return null; // the channel closed
    }
    try {
      id.adopt(link, n, req);
    } catch (RuntimeException e) {
      id.close();
      return null;
    }
    // the listener's lock orders this after any close of the listener has purged its requests
    channel.post(new CmEvent(CmEventType.CONNECT_REQUEST, id, this, 0, req.privateData().clone(),
        req.asSeenByReceiver()));
    return id;
  }

  private synchronized void adopt(CmLink l, int n, CmMessage req) {
    local = l.localAddress();
    remote = new InetSocketAddress(l.remoteAddress().getAddress(), req.port());
    request = req;
    handler.adopt(l, n);
    attach(local.getAddress());
    setState(CmState.CONNECT_REQUEST);
  }

  @Override
  public synchronized void accept(ConnectionParameters parameters) {
    String verb = "rdma_accept";
    expect(verb, "CONNECT_REQUEST (only a connection request's id can be accepted)",
        CmState.CONNECT_REQUEST);
    ConnectionParameters p = CmChecks.checked(verb, parameters,
        ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA, device.verbs);
    CmQpSteps.requireInit(verb, qp);
    Mtu mtu = smaller(request.mtu(), activeMtu());
    if (qp != null) {
      try {
        CmQpSteps.toRtr(qp, request, mtu, p.responderResources());
      } catch (RuntimeException e) {
        throw new RdmaException(verb, errnoOf(e),
            "moving QP " + qp.qpNum() + " to RTR failed: " + e.getMessage(), e);
      }
    }
    ours = p;
    psn = newPsn();
    trySend(CmMessage.rep(qp == null ? 0 : qp.qpNum(), psn, support.gid(device.verbs), mtu, p,
        local.getPort()));
    setState(CmState.ACCEPTING);
    long attempt = phase;
    inThisPhase(() -> deadline(attempt), support.connectTimeout());
  }

  /** The passive side's RTU: the QP goes to RTS and we are connected. */
  boolean readyToUse() {
    if (qp != null) {
      try {
        CmQpSteps.toRts(qp, psn, request.retryCount(), request.rnrRetryCount(),
            ours.initiatorDepth());
      } catch (RuntimeException e) {
        end(CmState.CONNECT_ERROR, -errnoOf(e), null, null);
        return false;
      }
    }
    setState(CmState.ESTABLISHED);
    post(CmEventType.ESTABLISHED, 0, null, null);
    return true;
  }

  @Override
  public synchronized void reject(byte[] privateData) {
    String verb = "rdma_reject";
    expect(verb, "CONNECT_REQUEST (only a connection request's id can be rejected)",
        CmState.CONNECT_REQUEST);
    byte[] data = privateData == null ? new byte[0] : privateData.clone();
    if (data.length > ConnectionParameters.MAX_REJECT_PRIVATE_DATA) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length
          + " bytes of private data; a reject carries at most "
          + ConnectionParameters.MAX_REJECT_PRIVATE_DATA);
    }
    setState(CmState.REJECTED);
    trySend(CmMessage.rej(CmEvent.REJECT_CONSUMER_DEFINED, data));
    leaveLink(); // the requester's conversation ends with the REJ
  }

  // ---- disconnecting

  @Override
  public synchronized void disconnect() {
    String verb = "rdma_disconnect";
    if (state == CmState.DISCONNECTING || state == CmState.DISCONNECTED) {
      // the kernel's rdma_disconnect ignores a DREQ/DREP it cannot send: a second call, or one
      // after the peer left, succeeds, so applications may call it unconditionally at teardown
      CmQpSteps.flush(qp);
      return;
    }
    expect(verb, "ESTABLISHED", CmState.ESTABLISHED);
    CmQpSteps.flush(qp); // as rdma_disconnect does, before it sends DREQ
    setState(CmState.DISCONNECTING);
    trySend(CmMessage.bare(CmMessage.Kind.DREQ));
    long attempt = phase;
    inThisPhase(() -> deadline(attempt), support.connectTimeout());
  }

  void disconnected() {
    setState(CmState.DISCONNECTED);
    CmQpSteps.flush(qp);
    post(CmEventType.DISCONNECTED, 0, null, null);
    long after = phase;
    inThisPhase(() -> {
      synchronized (this) {
        if (phase == after) post(CmEventType.TIMEWAIT_EXIT, 0, null, null);
      }
    }, TIMEWAIT);
  }

  // ---- the connection's messages

  @Override
  synchronized void deadline(long setInPhase) {
    if (phase != setInPhase) return;
    switch (state) {
      case ADDR_QUERY:
        setState(beforeQuery);
        post(CmEventType.ADDR_ERROR, -ETIMEDOUT, null, null);
        break;
      case CONNECTING:
        trySend(CmMessage.rej(CmMessage.REJECT_TIMEOUT, null));
        end(CmState.UNREACHABLE, -ETIMEDOUT, null, null);
        break;
      case ACCEPTING:
        end(CmState.UNREACHABLE, -ETIMEDOUT, null, null);
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
  void end(CmState how, int status, byte[] privateData, ConnectionParameters p) {
    setState(how);
    closeSocket();
    CmEventType type = how == CmState.REJECTED ? CmEventType.REJECTED
        : how == CmState.UNREACHABLE ? CmEventType.UNREACHABLE : CmEventType.CONNECT_ERROR;
    post(type, status, privateData, p);
  }

  /**
   * Drops the link with a TCP reset and without a DREQ, as a process that dies would: every
   * connection on it loses its peer; this id reports nothing more about it. For tests that need
   * a vanishing peer.
   */
  synchronized void drop() {
    setState(CmState.DISCONNECTED);
    handler.reset();
    closeSocket();
  }

  // ---- device removal and destruction

  @Override
  void deviceRemoved() {
    synchronized (this) {
      if (state == CmState.DESTROYED || state == CmState.DEVICE_REMOVAL) return;
      setState(CmState.DEVICE_REMOVAL);
      // a listener stops answering; a connection stays until the application destroys the id,
      // as it must on DEVICE_REMOVAL, and the peer hears of it then (as with rdma_cm)
      stopListening();
      post(CmEventType.DEVICE_REMOVAL, 0, null, null);
    }
  }

  @Override
  Runnable letGo() {
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
    closeSocket();
    stopListening();
    if (portHeld != null) PortSpace.release(portHeld);
    return null;
  }

  // ---- helpers (callers hold the monitor where state is touched)

  private void post(CmEventType type, int status, byte[] privateData,
      ConnectionParameters parameters) {
    channel.post(new CmEvent(type, this, null, status,
        privateData == null ? new byte[0] : privateData.clone(), parameters));
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

  Mtu activeMtu() {
    return device.activeMtu();
  }

  /** Queues {@code m} for the peer; a peer that is gone shows when its link breaks. */
  void trySend(CmMessage m) {
    handler.send(m);
  }

  /** The conversation is over on this side: the link forgets it (and may close). */
  void leaveLink() {
    handler.leave();
  }

  void closeSocket() {
    leaveLink();
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
