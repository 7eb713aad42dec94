package dev.pekkordma.nativeverbs;

import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/** A librdmacm id: {@code struct rdma_cm_id *} (RDMA_PS_TCP). */
final class NativeCmId implements CmId {
  final NativeCmChannel channel;
  final long handle;
  private final Object context;
  private volatile NativeQp qp;
  private final AtomicBoolean closed = new AtomicBoolean();

  NativeCmId(NativeCmChannel channel, long id, Object context) {
    this.channel = channel;
    this.handle = id;
    this.context = context;
  }

  private void checkOpen(String verb) {
    if (closed.get()) {
      throw new RdmaException(verb, RdmaException.EINVAL, this + " is already destroyed");
    }
  }

  @Override public Object context() { return context; }
  @Override public CmEventChannel channel() { return channel; }

  @Override public RdmaPortSpace portSpace() { return RdmaPortSpace.TCP; }

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

  @Override
  public void connect(ConnectionParameters parameters) {
    checkOpen("rdma_connect");
    long p = connParam(parameters, ConnectionParameters.MAX_CONNECT_PRIVATE_DATA, "rdma_connect");
    Verbs.connect(handle, p);
  }

  @Override
  public void accept(ConnectionParameters parameters) {
    checkOpen("rdma_accept");
    long p = connParam(parameters, ConnectionParameters.MAX_ACCEPT_PRIVATE_DATA, "rdma_accept");
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
    if (data.length > ConnectionParameters.MAX_REJECT_PRIVATE_DATA) {
      throw new RdmaException("rdma_reject", RdmaException.EINVAL, data.length
          + " bytes of private data; at most " + ConnectionParameters.MAX_REJECT_PRIVATE_DATA);
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

  @Override
  public void destroyQp() {
    NativeQp q = qp;
    if (q != null) q.close();
  }

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
    return "CM id 0x" + Long.toHexString(handle);
  }
}
