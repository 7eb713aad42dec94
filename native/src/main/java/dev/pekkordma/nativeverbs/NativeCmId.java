package dev.pekkordma.nativeverbs;

import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A librdmacm id: {@code struct rdma_cm_id *}, of RDMA_PS_TCP (connected RC QPs) or RDMA_PS_UDP
 * (a UD QP; connect is a SIDR exchange; multicast groups).
 */
final class NativeCmId implements CmId {
  /**
   * The private data a SIDR request carries for the application: the kernel's 216 bytes less
   * rdma_cm's 36-byte header (IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE, struct cma_hdr).
   */
  static final int MAX_SIDR_REQUEST_PRIVATE_DATA = 180;
  /** The private data of a SIDR reply, an accept's or a reject's (IB_CM_SIDR_REP_PRIVATE_DATA_SIZE). */
  static final int MAX_SIDR_REPLY_PRIVATE_DATA = 136;
  /** The kernel's ENOTSUPP (not a user errno): its RoCE v2 multicast joins IPv4 groups only. */
  private static final int KERNEL_ENOTSUPP = 524;
  /** Contexts given to rdma_join_multicast: they come back in its events. */
  private static final AtomicLong JOIN_TOKENS = new AtomicLong();

  final NativeCmChannel channel;
  final long handle;
  private final Object context;
  private final RdmaPortSpace space;
  private volatile NativeQp qp;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The groups joined (as given to joinMulticast), with the context of each join. */
  private final Map<InetSocketAddress, Long> groups = new ConcurrentHashMap<>();
  /** The group address each join's MULTICAST_JOIN gave (what librdmacm attached), by context. */
  private final Map<Long, AddressVector> joinedGroups = new ConcurrentHashMap<>();

  NativeCmId(NativeCmChannel channel, long id, Object context, RdmaPortSpace space) {
    this.channel = channel;
    this.handle = id;
    this.context = context;
    this.space = space;
  }

  /** librdmacm's name of a port space: RDMA_PS_UDP. */
  static String psName(RdmaPortSpace space) {
    return "RDMA_PS_" + space.name();
  }

  private void checkOpen(String verb) {
    if (closed.get()) {
      throw new RdmaException(verb, RdmaException.EINVAL, this + " is already destroyed");
    }
  }

  @Override public Object context() { return context; }
  @Override public CmEventChannel channel() { return channel; }

  @Override public RdmaPortSpace portSpace() { return space; }

  /**
   * rdma_join_multicast with a context of ours, which its MULTICAST_JOIN or MULTICAST_ERROR
   * carries back. Refused before librdmacm sees it: on a connected (TCP) id, an address that is
   * not a multicast one (the kernel's RoCE join would take a unicast address as a group), an id
   * neither bound nor resolved, a group it already joined.
   */
  @Override
  public void joinMulticast(InetSocketAddress group) {
    checkOpen("rdma_join_multicast");
    if (!space.datagram()) {
      throw new RdmaException("rdma_join_multicast", RdmaException.EINVAL,
          "an " + psName(space) + " id cannot join a multicast group (" + group
              + "): datagram ids (RDMA_PS_UDP) only");
    }
    if (group == null || group.getAddress() == null) {
      throw new RdmaException("rdma_join_multicast", RdmaException.EINVAL,
          "unresolved multicast address " + group);
    }
    if (!group.getAddress().isMulticastAddress()) {
      throw new RdmaException("rdma_join_multicast", RdmaException.EINVAL,
          group.getAddress().getHostAddress() + " is not a multicast address (IPv4 224.0.0.0/4,"
              + " IPv6 ff00::/8): " + this + " cannot join it as a group");
    }
    if (verbsHandle() == 0) {
      throw new RdmaException("rdma_join_multicast", RdmaException.EINVAL, this
          + " is neither bound nor resolved: bind it (or resolve an address) first, which"
          + " chooses the device that joins " + group.getAddress().getHostAddress());
    }
    long token = JOIN_TOKENS.incrementAndGet();
    if (groups.putIfAbsent(group, token) != null) {
      throw new RdmaException("rdma_join_multicast", RdmaException.EADDRINUSE,
          this + " has already joined " + group);
    }
    long sa = Verbs.scratch(Layout.SOCKADDR_STORAGE_SIZE);
    writeSockaddr(sa, group, "rdma_join_multicast");
    int rc = Verbs.joinMulticast(handle, sa, token);
    if (rc != 0) {
      groups.remove(group, token);
      if (rc == KERNEL_ENOTSUPP) {
        throw new RdmaException("rdma_join_multicast", RdmaException.EOPNOTSUPP, "joining "
            + group.getAddress().getHostAddress() + " on " + this + ": the kernel joins IPv4"
            + " groups only on RoCE v2 (ENOTSUPP)");
      }
      throw Verbs.fail("rdma_join_multicast", rc, "joining " + group.getAddress().getHostAddress()
          + " on " + this);
    }
  }

  /** rdma_leave_multicast: detaches the QP, leaves; then any attach a late event made is undone. */
  @Override
  public void leaveMulticast(InetSocketAddress group) {
    checkOpen("rdma_leave_multicast");
    if (!space.datagram()) {
      throw new RdmaException("rdma_leave_multicast", RdmaException.EINVAL,
          "an " + psName(space) + " id joins no multicast group (" + group + ")");
    }
    Long token = group == null ? null : groups.get(group);
    if (token == null) {
      throw new RdmaException("rdma_leave_multicast", RdmaException.EADDRNOTAVAIL,
          this + " has not joined " + group + (groups.isEmpty() ? " (it joined none)"
              : " (it joined " + groups.keySet() + ")"));
    }
    leave(group, token);
  }

  private void leave(InetSocketAddress group, long token) {
    long sa = Verbs.scratch(Layout.SOCKADDR_STORAGE_SIZE);
    writeSockaddr(sa, group, "rdma_leave_multicast");
    // blocks until the group's events so far are acknowledged, which the channel's reader does
    int rc = Verbs.leaveMulticast(handle, sa);
    groups.remove(group, token);
    // librdmacm detaches before it leaves: a MULTICAST_JOIN read in between attached the QP again
    // (and a QP still attached is not destroyed). Every event of the join is read by now.
    AddressVector joined = joinedGroups.remove(token);
    NativeQp q = qp;
    if (joined != null && q != null && !q.isClosed()) {
      Verbs.detachMulticast(q.handle, joined.dgid().toBytes(), joined.dlid());
    }
    if (rc != 0 && rc != RdmaException.EADDRNOTAVAIL) {
      throw Verbs.fail("rdma_leave_multicast", rc, "leaving " + group + " on " + this);
    }
  }

  /** Leaves every group joined (before the QP is destroyed or the id is). */
  void leaveAllGroups(List<RuntimeException> failures) {
    for (Map.Entry<InetSocketAddress, Long> g : new ArrayList<>(groups.entrySet())) {
      try {
        leave(g.getKey(), g.getValue());
      } catch (RuntimeException e) {
        failures.add(e);
      }
    }
  }

  /** From the channel's reader: the MULTICAST_JOIN of the join with {@code token}. */
  void joined(long token, AddressVector group) {
    if (groups.containsValue(token)) joinedGroups.put(token, group);
  }

  /**
   * A passive datagram id's way back to the requester, which the SIDR request does not carry
   * (its event's address vector is zeros): the route's remote GID, reached from the local GID's
   * index. Null when the local GID is not in the port's table.
   */
  AddressVector requesterAddressVector() {
    long ctx = verbsHandle();
    if (ctx == 0) return null;
    byte[] sgid = new byte[Layout.GID_SIZE];
    byte[] dgid = new byte[Layout.GID_SIZE];
    NativeMemory.copyToArray(handle + Layout.CM_ID_SGID, sgid, 0, sgid.length);
    NativeMemory.copyToArray(handle + Layout.CM_ID_DGID, dgid, 0, dgid.length);
    int port = portNum();
    try {
      int index = channel.provider.borrowedContext(ctx).gidIndexOf(port, Gid.of(sgid));
      return index < 0 ? null : AddressVector.global(Gid.of(dgid), index, port);
    } catch (RuntimeException e) {
      return null; // the device going away under the request: its event says the rest
    }
  }

  @Override
  public void bind(InetSocketAddress local) {
    checkOpen("rdma_bind_addr");
    long sa = Verbs.scratch(Layout.SOCKADDR_STORAGE_SIZE);
    writeSockaddr(sa, local, "rdma_bind_addr");
    Verbs.bindAddr(handle, sa, "binding to " + local);
  }

  @Override
  public void listen(int backlog) {
    checkOpen("rdma_listen");
    Verbs.listen(handle, backlog);
  }

  @Override
  public void resolveAddress(InetSocketAddress source, InetSocketAddress destination,
      Duration timeout) {
    checkOpen("rdma_resolve_addr");
    long sa = Verbs.scratch(2 * Layout.SOCKADDR_STORAGE_SIZE);
    long src = 0;
    if (source != null) {
      src = sa;
      writeSockaddr(src, source, "rdma_resolve_addr");
    }
    long dst = sa + Layout.SOCKADDR_STORAGE_SIZE;
    writeSockaddr(dst, destination, "rdma_resolve_addr");
    Verbs.resolveAddr(handle, src, dst, millis(timeout),
        "resolving " + destination + (source != null ? " from " + source : ""));
  }

  @Override
  public void resolveRoute(Duration timeout) {
    checkOpen("rdma_resolve_route");
    Verbs.resolveRoute(handle, millis(timeout));
  }

  private static int millis(Duration d) {
    if (d == null) return 2000;
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
  }

  @Override
  public DeviceContext verbs() {
    long ctx = verbsHandle();
    return ctx == 0 ? null : channel.provider.borrowedContext(ctx);
  }

  /** The ibv_context librdmacm bound the id to; 0 before that. */
  long verbsHandle() {
    return closed.get() ? 0 : NativeMemory.getLong(handle + Layout.CM_ID_VERBS);
  }

  @Override
  public int portNum() {
    return NativeQp.u8(handle + Layout.CM_ID_PORT_NUM);
  }

  @Override
  public InetSocketAddress localAddress() {
    return readSockaddr(handle + Layout.CM_ID_SRC_ADDR);
  }

  @Override
  public InetSocketAddress remoteAddress() {
    return readSockaddr(handle + Layout.CM_ID_DST_ADDR);
  }

  @Override
  public QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes) {
    checkOpen("rdma_create_qp");
    if (attributes != null && !space.takes(attributes.type())) {
      throw new RdmaException("rdma_create_qp", RdmaException.EINVAL, "an " + psName(space)
          + " id takes " + (space.datagram() ? "UD" : "RC") + " QPs, not " + attributes.type()
          + " (" + this + ")");
    }
    if (qp != null) {
      throw new RdmaException("rdma_create_qp", RdmaException.EBUSY, this + " already has " + qp);
    }
    if (!(pd instanceof NativePd)) {
      throw new RdmaException("rdma_create_qp", RdmaException.EINVAL, "not a native PD");
    }
    NativePd p = (NativePd) pd;
    long verbs = NativeMemory.getLong(handle + Layout.CM_ID_VERBS);
    if (verbs == 0) {
      throw new RdmaException("rdma_create_qp", RdmaException.EINVAL,
          this + " has no device yet: bind or resolve the address first");
    }
    if (p.context.handle != verbs) {
      throw new RdmaException("rdma_create_qp", RdmaException.EINVAL,
          "the PD is on " + p.context.device().name() + ", not on this id's device (use verbs())");
    }
    qp = NativeQp.create(p, attributes, this);
    return qp;
  }

  @Override
  public QueuePair qp() {
    return qp;
  }

  NativeQp qpOrNull() {
    return qp;
  }

  void qpClosed(NativeQp q) {
    if (qp == q) qp = null;
  }

  /** On a datagram id, a SIDR request: ESTABLISHED (the peer's QP) or UNREACHABLE follows. */
  @Override
  public void connect(ConnectionParameters parameters) {
    checkOpen("rdma_connect");
    long p = connParam(parameters, space.datagram() ? MAX_SIDR_REQUEST_PRIVATE_DATA
        : ConnectionParameters.MAX_CONNECT_PRIVATE_DATA, "rdma_connect");
    Verbs.connect(handle, p);
  }

  /**
   * On a datagram id, the SIDR reply with its QP's number and Q_Key; the requester gets
   * ESTABLISHED, this side no event. Its QP must exist: the reply carries its number.
   */
  @Override
  public void accept(ConnectionParameters parameters) {
    checkOpen("rdma_accept");
    if (space.datagram() && qp == null) {
      throw new RdmaException("rdma_accept", RdmaException.EINVAL, this + " has no QP: create"
          + " its UD QP before accepting, the reply carries its number");
    }
    long p = connParam(parameters, space.datagram() ? MAX_SIDR_REPLY_PRIVATE_DATA
        : ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA, "rdma_accept");
    Verbs.accept(handle, p);
  }

  /** A struct rdma_conn_param in scratch memory, its private data right after it. */
  private static long connParam(ConnectionParameters c, int maxData, String verb) {
    if (c == null) c = ConnectionParameters.defaults();
    byte[] data = c.privateDataOrEmpty();
    if (data.length > maxData) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length
          + " bytes of private data; at most " + maxData);
    }
    long p = Verbs.scratch(Layout.CONN_PARAM_SIZE + 256);
    long d = p + Layout.CONN_PARAM_SIZE;
    if (data.length > 0) {
      NativeMemory.copyFromArray(data, 0, d, data.length);
      NativeMemory.putLong(p + Layout.CONN_PARAM_PRIVATE_DATA, d);
    }
    NativeQp.putU8(p + Layout.CONN_PARAM_PRIVATE_DATA_LEN, data.length);
    NativeQp.putU8(p + Layout.CONN_PARAM_RESPONDER_RESOURCES, c.responderResources());
    NativeQp.putU8(p + Layout.CONN_PARAM_INITIATOR_DEPTH, c.initiatorDepth());
    NativeQp.putU8(p + Layout.CONN_PARAM_RETRY_COUNT, c.retryCount());
    NativeQp.putU8(p + Layout.CONN_PARAM_RNR_RETRY_COUNT, c.rnrRetryCount());
    return p;
  }

  @Override
  public void reject(byte[] privateData) {
    checkOpen("rdma_reject");
    byte[] data = privateData == null ? new byte[0] : privateData;
    int max = space.datagram() ? MAX_SIDR_REPLY_PRIVATE_DATA
        : ConnectionParameters.MAX_REJECT_PRIVATE_DATA;
    if (data.length > max) {
      throw new RdmaException("rdma_reject", RdmaException.EINVAL, data.length
          + " bytes of private data; at most " + max);
    }
    long p = Verbs.scratch(256);
    NativeMemory.copyFromArray(data, 0, p, data.length);
    Verbs.reject(handle, data.length == 0 ? 0 : p, data.length);
  }

  /**
   * Under the id's lock, as its destruction and its QP's are: rdma_disconnect moves the QP to
   * ERR, so neither may be freed under it. The call does not block (the DREQ goes out later).
   */
  @Override
  public void disconnect() {
    synchronized (this) {
      checkOpen("rdma_disconnect");
      Verbs.disconnect(handle);
    }
  }

  /** Sends the DREP for a received DREQ (from the channel's event reader); errors are moot. */
  void answerDisconnect() {
    synchronized (this) {
      if (closed.get()) return;
      try {
        Verbs.disconnect(handle);
      } catch (RdmaException e) {
        // already disconnected: nothing to answer
      }
    }
  }

  /** Destroys its QP (rdma_destroy_qp), leaving first the multicast groups it joined. */
  @Override
  public void destroyQp() {
    NativeQp q = qp;
    if (q != null) q.close();
  }

  /** Leaves the groups it joined, then destroys the id (the kernel would leave them too). */
  @Override
  public void close() {
    if (closed.get()) return;
    synchronized (this) {
      if (closed.get()) return;
      NativeQp q = qp;
      if (q != null && !q.isClosed()) {
        throw new RdmaException("rdma_destroy_id", RdmaException.EBUSY,
            this + " still has " + q + ": destroyQp() first");
      }
      // what a leave fails on is moot: destroying the id leaves its groups in the kernel too
      leaveAllGroups(new ArrayList<>());
      Verbs.destroyId(handle);
      closed.set(true);
    }
    channel.ids.remove(handle);
    channel.provider.live.cmIds.decrementAndGet();
    channel.provider.releaseRemovedDevices();
  }

  // ---------------------------------------------------------------- sockaddr

  static void writeSockaddr(long p, InetSocketAddress a, String verb) {
    if (a == null || a.getAddress() == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "unresolved address " + a);
    }
    InetAddress ip = a.getAddress();
    byte[] raw = ip.getAddress();
    int port = a.getPort();
    if (ip instanceof Inet4Address) {
      NativeQp.putU16(p + Layout.SOCKADDR_FAMILY, Layout.AF_INET);
      NativeQp.putU8(p + Layout.SOCKADDR_IN_PORT, port >>> 8);
      NativeQp.putU8(p + Layout.SOCKADDR_IN_PORT + 1, port);
      NativeMemory.copyFromArray(raw, 0, p + Layout.SOCKADDR_IN_ADDR, 4);
    } else {
      NativeQp.putU16(p + Layout.SOCKADDR_FAMILY, Layout.AF_INET6);
      NativeQp.putU8(p + Layout.SOCKADDR_IN6_PORT, port >>> 8);
      NativeQp.putU8(p + Layout.SOCKADDR_IN6_PORT + 1, port);
      NativeMemory.copyFromArray(raw, 0, p + Layout.SOCKADDR_IN6_ADDR, 16);
      int scope = ip instanceof java.net.Inet6Address ? ((java.net.Inet6Address) ip).getScopeId() : 0;
      NativeMemory.putInt(p + Layout.SOCKADDR_IN6_SCOPE_ID, scope);
    }
  }

  static InetSocketAddress readSockaddr(long p) {
    int family = NativeQp.u16(p + Layout.SOCKADDR_FAMILY);
    try {
      if (family == Layout.AF_INET) {
        byte[] raw = new byte[4];
        NativeMemory.copyToArray(p + Layout.SOCKADDR_IN_ADDR, raw, 0, 4);
        int port = NativeQp.u8(p + Layout.SOCKADDR_IN_PORT) << 8 | NativeQp.u8(p + Layout.SOCKADDR_IN_PORT + 1);
        return new InetSocketAddress(InetAddress.getByAddress(raw), port);
      }
      if (family == Layout.AF_INET6) {
        byte[] raw = new byte[16];
        NativeMemory.copyToArray(p + Layout.SOCKADDR_IN6_ADDR, raw, 0, 16);
        int port = NativeQp.u8(p + Layout.SOCKADDR_IN6_PORT) << 8 | NativeQp.u8(p + Layout.SOCKADDR_IN6_PORT + 1);
        return new InetSocketAddress(InetAddress.getByAddress(raw), port);
      }
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
    return null;
  }

  @Override
  public String toString() {
    return (space == RdmaPortSpace.TCP ? "" : psName(space) + " ") + "CM id 0x"
        + Long.toHexString(handle);
  }
}
