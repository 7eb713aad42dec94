package dev.pekkordma.soft.cm;

import static dev.pekkordma.verbs.RdmaException.ETIMEDOUT;
import static dev.pekkordma.soft.cm.CmChecks.requireAddress;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * An RDMA_PS_UDP id of the software provider: a datagram id. Its address is a real UDP port
 * (a bound socket, so the kernel's UDP port space, apart from TCP's, holds it); its connect is
 * a SIDR exchange ({@link SidrMessage}) with the listener's socket at the destination, sent again
 * until a reply or the connect timeout; and it joins multicast groups ({@link CmGroups}). Its QP
 * is UD, in RTS with {@link UdParameters#UDP_QKEY} from {@code createQp} on.
 *
 * <p>As with the kernel's CM: a listener's CONNECT_REQUEST carries the requester's private data
 * and address (its GID; the requester's QPN comes with its first datagram); accept answers with
 * the id's QP number, Q_Key and private data, and the requester's ESTABLISHED carries them in
 * {@link CmEvent#ud()}; the accepting side sees no ESTABLISHED. A reject reaches the requester as
 * UNREACHABLE with status 2 (IB_SIDR_REJECT) and the private data, a request to a port nobody
 * listens on as UNREACHABLE with status 1 (IB_SIDR_UNSUPPORTED): an id bound there that does not
 * listen answers so itself, and where no socket has the port the host's ICMP port unreachable
 * says it. Silence ends as UNREACHABLE with -ETIMEDOUT. Private data arrives padded with zeros
 * as the kernel's CM delivers it: a request's to 180 bytes, a reply's or reject's to 136. SIDR
 * messages cross the network in the clear even where {@code pekko-rdma.soft.tls} is on.
 */
final class SoftUdpCmId extends AbstractSoftCmId {
  /** A SIDR request not answered within this is sent again (the IB CM retries too). */
  static final Duration RESEND = Duration.ofMillis(250);

  // guarded by this
  private final CmGroups groups = new CmGroups();
  /** The id's own socket: its port, from bind or resolve. */
  private DatagramChannel socket;
  /** The requester: its attempt's id and REQ. */
  private int requestId;
  private byte[] request;
  /** A listener's requests by requester and attempt, until their ids are destroyed. */
  private Map<Attempt, SoftUdpCmId> requests;
  /** A request's id: its listener, the socket its reply goes out of, and the reply. */
  private SoftUdpCmId listener;
  private Attempt attempt;
  private SharedSocket replyVia;
  private byte[] reply;
  /** The socket of a listener, shared with its requests' ids until the last is gone. */
  private SharedSocket shared;

  private record Attempt(InetSocketAddress from, int requestId) {}

  /** A socket some ids share: closed when the last lets go. */
  private static final class SharedSocket {
    final DatagramChannel channel;
    private int users = 1;

    SharedSocket(DatagramChannel channel) {
      this.channel = channel;
    }

    synchronized SharedSocket take() {
      users++;
      return this;
    }

    synchronized void release() {
      if (--users == 0) CmSocket.closeQuietly(channel);
    }
  }

  SoftUdpCmId(SoftCmEventChannel channel, Object context) {
    super(channel, context);
  }

  @Override
  public RdmaPortSpace portSpace() {
    return RdmaPortSpace.UDP;
  }

  // ---- addresses and routes

  @Override
  public synchronized void bind(InetSocketAddress address) {
    String verb = "rdma_bind_addr";
    checkBindable(verb, address);
    DatagramChannel s = open(verb, address);
    try {
      attach(address.getAddress());
      watch(verb, s);
    } catch (RuntimeException e) {
      CmSocket.closeQuietly(s);
      throw e;
    }
    socket = s;
    local = boundAddress(s, address.getAddress());
    setState(CmState.ADDR_BOUND);
  }

  /**
   * Reads {@code s} from now until the id is destroyed: as the kernel's CM, every id answers
   * the SIDR requests that reach its port, a listener by a CONNECT_REQUEST, any other id by a
   * reply of status 1 (IB_SIDR_UNSUPPORTED).
   */
  private void watch(String verb, DatagramChannel s) {
    try {
      resources.sidr.watch(s, new SidrService.SidrSide() {
        @Override
        public void received(SidrMessage m, InetSocketAddress from) {
          heard(m, from);
        }

        @Override
        public void unreachable() {
          portUnreachable();
        }
      });
    } catch (IOException e) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the provider is closed", e);
    }
  }

  private synchronized void heard(SidrMessage m, InetSocketAddress from) {
    if (state == CmState.LISTEN) {
      requested(m, from);
    } else if (m.kind() == SidrMessage.REQ) {
      if (socket != null) {
        send(socket, SidrMessage.rep(m.requestId(), SidrMessage.UNSUPPORTED, 0, 0, null,
            new byte[0]).encode(), from);
      }
    } else {
      replied(m);
    }
  }

  /** A UDP socket bound to {@code address}: EADDRINUSE naming it when the port is taken. */
  private static DatagramChannel open(String verb, InetSocketAddress address) {
    DatagramChannel s = null;
    try {
      s = DatagramChannel.open();
      s.bind(address);
      return s;
    } catch (IOException e) {
      CmSocket.closeQuietly(s);
      throw new RdmaException(verb, RdmaException.EADDRINUSE, "UDP " + CmSocket.describe(address)
          + " is in use: " + e.getMessage(), e);
    }
  }

  private static InetSocketAddress boundAddress(DatagramChannel s, InetAddress ip) {
    try {
      return new InetSocketAddress(ip, ((InetSocketAddress) s.getLocalAddress()).getPort());
    } catch (IOException e) {
      throw new RdmaException("rdma_bind_addr", RdmaException.EINVAL, e.getMessage(), e);
    }
  }

  @Override
  public synchronized void listen(int backlog) {
    String verb = "rdma_listen";
    if (backlog < 0) {
      throw new RdmaException(verb, RdmaException.EINVAL, "backlog = " + backlog + " is negative");
    }
    expect(verb, "ADDR_BOUND (bind first)", CmState.ADDR_BOUND);
    shared = new SharedSocket(socket);
    socket = null; // the shared socket holds the port now
    requests = new HashMap<>();
    setState(CmState.LISTEN);
    resources.warnIfInTheClear(local.getAddress(), "listening for SIDR requests on "
        + CmSocket.describe(local));
    resources.warnDatagramsOutsideTls("a datagram id listens on " + CmSocket.describe(local));
  }

  @Override
  boolean takesPortZero(InetSocketAddress destination) {
    return destination.getAddress() != null && destination.getAddress().isMulticastAddress();
  }

  @Override
  InetSocketAddress takePort(InetAddress ip, int port) {
    DatagramChannel s = open("rdma_resolve_addr", new InetSocketAddress(ip, port));
    try {
      attach(ip);
      watch("rdma_resolve_addr", s);
    } catch (RuntimeException e) {
      CmSocket.closeQuietly(s);
      throw e;
    }
    socket = s;
    return boundAddress(s, ip);
  }

  // ---- the QP

  @Override
  public synchronized QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes) {
    String verb = "rdma_create_qp";
    expect(verb, "ADDR_BOUND, ADDR_RESOLVED, ROUTE_RESOLVED or CONNECT_REQUEST",
        CmState.ADDR_BOUND, CmState.ADDR_RESOLVED, CmState.ROUTE_QUERY, CmState.ROUTE_RESOLVED,
        CmState.CONNECT_REQUEST, CmState.ESTABLISHED);
    qp = CmQpSteps.create(verb, RdmaPortSpace.UDP, pd, attributes, device.verbs, qp);
    return qp;
  }

  @Override
  public synchronized void destroyQp() {
    String verb = "rdma_destroy_qp";
    if (qp == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the id (state " + state + ") has no QP");
    }
    if (!groups.attached().isEmpty()) {
      // as ibv_destroy_qp (uverbs) refuses a QP still attached to groups
      throw new RdmaException(verb, RdmaException.EBUSY, "QP " + qp.qpNum()
          + " is attached to multicast group(s) " + groups.attached()
          + "; leave them first (leaveMulticast)");
    }
    qp.close();
    qp = null;
  }

  // ---- SIDR: the requester

  @Override
  public synchronized void connect(ConnectionParameters parameters) {
    String verb = "rdma_connect";
    expect(verb, "ROUTE_RESOLVED (resolve address and route first)", CmState.ROUTE_RESOLVED);
    byte[] data = privateData(verb, parameters, SidrMessage.MAX_REQ_PRIVATE_DATA, "a SIDR request");
    if (remote.getPort() == 0) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the destination "
          + CmSocket.describe(remote) + " has port 0 (a group is joined, not connected to)");
    }
    try {
      if (!socket.isConnected()) socket.connect(remote); // so that ICMP port unreachable shows
    } catch (IOException e) {
      throw new RdmaException(verb, RdmaException.EADDRNOTAVAIL, "cannot send a SIDR request to "
          + CmSocket.describe(remote) + ": " + e.getMessage(), e);
    }
    requestId = ThreadLocalRandom.current().nextInt();
    request = SidrMessage.req(requestId, support.gid(device.verbs), data).encode();
    setState(CmState.CONNECTING);
    resources.warnIfInTheClear(remote.getAddress(), "sending SIDR requests to "
        + CmSocket.describe(remote));
    resources.warnDatagramsOutsideTls("a datagram id connects to " + CmSocket.describe(remote));
    long attempt = phase;
    inThisPhase(() -> deadline(attempt), support.connectTimeout());
    sendRequest(attempt);
  }

  private synchronized void sendRequest(long attempt) {
    if (phase != attempt || state != CmState.CONNECTING) return;
    if (!send(socket, request, remote)) {
      portUnreachable();
      return;
    }
    inThisPhase(() -> sendRequest(attempt), RESEND);
  }

  private synchronized void replied(SidrMessage m) {
    if (state != CmState.CONNECTING || m.kind() != SidrMessage.REP
        || m.requestId() != requestId) {
      return; // a late reply, or one for an attempt of before: the IB CM drops it too
    }
    byte[] data = SidrMessage.padded(m.privateData(), SidrMessage.MAX_REP_PRIVATE_DATA);
    if (m.status() == SidrMessage.SUCCESS) {
      setState(CmState.ESTABLISHED);
      post(CmEventType.ESTABLISHED, 0, data, new UdParameters(data.clone(),
          AddressVector.global(m.gid(), 0, 1), m.qpn(), m.qkey()));
    } else {
      setState(CmState.UNREACHABLE);
      post(CmEventType.UNREACHABLE, m.status(), data, null);
    }
  }

  private synchronized void portUnreachable() {
    if (state != CmState.CONNECTING) return;
    // no socket has the port: the kernel's CM, where no id has it, replies "unsupported"
    setState(CmState.UNREACHABLE);
    post(CmEventType.UNREACHABLE, SidrMessage.UNSUPPORTED,
        new byte[SidrMessage.MAX_REP_PRIVATE_DATA], null);
  }

  // ---- SIDR: the listener and its requests' ids

  /** A listener's SIDR message (under the monitor): a new request, or one sent again. */
  private void requested(SidrMessage m, InetSocketAddress from) {
    if (m.kind() != SidrMessage.REQ) return; // a reply to a listener: nobody asked
    Attempt a = new Attempt(from, m.requestId());
    SoftUdpCmId known = requests.get(a);
    if (known != null) {
      known.answerAgain();
      return;
    }
    if (requests.size() >= resources.maxConnections) return; // the requester times out
    SoftUdpCmId id;
    try {
      id = channel.newUdpId(context(), "rdma_listen");
    } catch (RdmaException e) {
      return; // the channel closed
    }
    try {
      id.adopt(this, a, m);
    } catch (RuntimeException e) {
      id.close();
      return;
    }
    requests.put(a, id);
    byte[] data = SidrMessage.padded(m.privateData(), SidrMessage.MAX_REQ_PRIVATE_DATA);
    channel.post(new CmEvent(CmEventType.CONNECT_REQUEST, id, this, 0, data,
        // a SIDR request names neither the requester's QP nor its Q_Key: 0, as the kernel's
        null, new UdParameters(data.clone(), AddressVector.global(m.gid(), 0, 1), 0, 0)));
  }

  private synchronized void adopt(SoftUdpCmId l, Attempt a, SidrMessage req) {
    local = l.local;
    remote = a.from();
    attach(local.getAddress());
    listener = l;
    attempt = a;
    replyVia = l.shared.take();
    setState(CmState.CONNECT_REQUEST);
  }

  /** A REQ came again: its REP was lost, or is still to come. */
  private synchronized void answerAgain() {
    if (reply != null && replyVia != null) send(replyVia.channel, reply, remote);
  }

  @Override
  public synchronized void accept(ConnectionParameters parameters) {
    String verb = "rdma_accept";
    expect(verb, "CONNECT_REQUEST (only a SIDR request's id can be accepted)",
        CmState.CONNECT_REQUEST);
    byte[] data = privateData(verb, parameters, SidrMessage.MAX_REP_PRIVATE_DATA, "a SIDR reply");
    if (qp == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the id has no QP: the requester's"
          + " ESTABLISHED names it (createQp first)");
    }
    answer(SidrMessage.rep(attempt.requestId(), SidrMessage.SUCCESS, qp.qpNum(),
        UdParameters.UDP_QKEY, support.gid(device.verbs), data), CmState.ESTABLISHED);
  }

  @Override
  public synchronized void reject(byte[] privateData) {
    String verb = "rdma_reject";
    expect(verb, "CONNECT_REQUEST (only a SIDR request's id can be rejected)",
        CmState.CONNECT_REQUEST);
    byte[] data = privateData == null ? new byte[0] : privateData.clone();
    if (data.length > SidrMessage.MAX_REP_PRIVATE_DATA) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length + " bytes of private data;"
          + " a SIDR reply carries at most " + SidrMessage.MAX_REP_PRIVATE_DATA);
    }
    answer(SidrMessage.rep(attempt.requestId(), SidrMessage.REJECT, 0, 0, null, data),
        CmState.REJECTED);
  }

  private void answer(SidrMessage rep, CmState then) {
    reply = rep.encode();
    setState(then);
    send(replyVia.channel, reply, remote);
  }

  // ---- multicast

  @Override
  public synchronized void joinMulticast(InetSocketAddress group) {
    String verb = "rdma_join_multicast";
    CmGroups.checkGroup(verb, group);
    expect(verb, "ADDR_BOUND or ADDR_RESOLVED (bind or resolve first) to join group "
        + group.getAddress().getHostAddress(), CmState.ADDR_BOUND, CmState.ADDR_RESOLVED);
    UdParameters ud;
    try {
      ud = groups.join(verb, group, qp, support);
    } catch (RdmaException e) {
      if (e.errno() != RdmaException.ENODEV) throw e;
      // the process could not join the group: as librdmacm reports a failed attach
      post(CmEventType.MULTICAST_ERROR, -e.errno(), null, null);
      return;
    }
    resources.warnDatagramsOutsideTls("a datagram id joins group "
        + group.getAddress().getHostAddress());
    channel.post(new CmEvent(CmEventType.MULTICAST_JOIN, this, null, 0, new byte[0], null, ud));
  }

  @Override
  public synchronized void leaveMulticast(InetSocketAddress group) {
    expect("rdma_leave_multicast", "a live id", CmState.values());
    groups.leave("rdma_leave_multicast", group, support);
  }

  @Override
  public void disconnect() {
    throw new RdmaException("rdma_disconnect", RdmaException.EINVAL,
        "an RDMA_PS_UDP id has no connection to disconnect (destroy it, or its QP)");
  }

  // ---- deadlines, device removal, destruction

  @Override
  synchronized void deadline(long setInPhase) {
    if (phase != setInPhase) return;
    if (state == CmState.ADDR_QUERY) {
      setState(beforeQuery);
      post(CmEventType.ADDR_ERROR, -ETIMEDOUT, null, null);
    } else if (state == CmState.CONNECTING) {
      setState(CmState.UNREACHABLE);
      post(CmEventType.UNREACHABLE, -ETIMEDOUT, null, null);
    }
  }

  @Override
  synchronized void deviceRemoved() {
    if (state == CmState.DESTROYED || state == CmState.DEVICE_REMOVAL) return;
    if (state == CmState.LISTEN) resources.sidr.stop(shared.channel);
    setState(CmState.DEVICE_REMOVAL);
    post(CmEventType.DEVICE_REMOVAL, 0, null, null);
  }

  @Override
  Runnable letGo() {
    groups.leaveAll(support);
    if (socket != null) {
      resources.sidr.stop(socket);
      CmSocket.closeQuietly(socket);
      socket = null;
    }
    if (shared != null) {
      resources.sidr.stop(shared.channel);
      shared.release();
      shared = null;
    }
    if (replyVia != null) replyVia.release();
    replyVia = null;
    SoftUdpCmId from = listener;
    Attempt a = attempt;
    listener = null;
    return from == null ? null : () -> from.forgetRequest(a, this);
  }

  private synchronized void forgetRequest(Attempt a, SoftUdpCmId id) {
    if (requests != null) requests.remove(a, id);
  }

  // ---- helpers (callers hold the monitor)

  private void post(CmEventType type, int status, byte[] privateData, UdParameters ud) {
    channel.post(new CmEvent(type, this, null, status,
        privateData == null ? new byte[0] : privateData.clone(), null, ud));
  }

  private static byte[] privateData(String verb, ConnectionParameters p, int max, String what) {
    if (p == null) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "connection parameters are null (ConnectionParameters.defaults() has none to say)");
    }
    byte[] data = p.privateDataOrEmpty().clone();
    if (data.length > max) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length + " bytes of private data; "
          + what + " carries at most " + max);
    }
    return data;
  }

  /**
   * Sends one datagram; a loss is the protocol's (the requester sends again). False when the
   * host said, for an earlier one, that nobody has the port (a connected socket hears it).
   */
  private static boolean send(DatagramChannel ch, byte[] message, InetSocketAddress to) {
    try {
      if (ch.isConnected()) ch.write(ByteBuffer.wrap(message));
      else ch.send(ByteBuffer.wrap(message), to);
    } catch (java.net.PortUnreachableException e) {
      return false;
    } catch (IOException e) {
      // closed meanwhile, or no buffer: lost, as a datagram may be
    }
    return true;
  }

  @Override
  public synchronized String toString() {
    return "CmId(UDP " + (local != null ? CmSocket.describe(local) : "unbound")
        + (remote != null ? " -> " + CmSocket.describe(remote) : "") + ", " + state + ")";
  }
}
