package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.AtomicCapability;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.LinkLayer;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.Checks;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** An open device: {@code struct ibv_context *}. */
final class NativeDeviceContext extends NativeResource implements DeviceContext {
  final NativeProvider provider;
  private final RdmaDevice device;
  final int asyncFd;
  /** The ops-table entries the inline verbs call, read once. */
  final long fnPollCq;
  final long fnReqNotifyCq;
  final long fnPostSend;
  final long fnPostRecv;
  final long fnPostSrqRecv;
  /** Objects by their C pointer, to map async and completion events back. */
  final Map<Long, NativeQp> qpsByHandle = new ConcurrentHashMap<>();
  final Map<Long, NativeCq> cqsByHandle = new ConcurrentHashMap<>();
  final Map<Long, NativeSrq> srqsByHandle = new ConcurrentHashMap<>();
  private final Object asyncLock = new Object();
  private volatile DeviceAttributes attributes;
  private volatile int capFlags;
  /** A context librdmacm opened (an id's verbs): never closed here, not counted. */
  final boolean borrowed;
  /** Where the ports' counters are read: the verbs have none. */
  private final SysfsCounters sysfs = SysfsCounters.fromSystemProperty();

  NativeDeviceContext(NativeProvider provider, RdmaDevice device, long context, boolean borrowed) {
    super(context, null);
    this.provider = provider;
    this.borrowed = borrowed;
    this.device = device;
    this.asyncFd = NativeMemory.getInt(context + Layout.CONTEXT_ASYNC_FD);
    this.fnPollCq = Verbs.op(context, Layout.CONTEXT_OPS_POLL_CQ);
    this.fnReqNotifyCq = Verbs.op(context, Layout.CONTEXT_OPS_REQ_NOTIFY_CQ);
    this.fnPostSend = Verbs.op(context, Layout.CONTEXT_OPS_POST_SEND);
    this.fnPostRecv = Verbs.op(context, Layout.CONTEXT_OPS_POST_RECV);
    this.fnPostSrqRecv = Verbs.op(context, Layout.CONTEXT_OPS_POST_SRQ_RECV);
  }

  @Override int rank() { return 0; }
  @Override public String describe() { return "context of " + device.name(); }
  @Override String destroyVerb() { return "ibv_close_device"; }
  @Override
  void destroy() {
    if (!borrowed) Verbs.closeDevice(handle, device.name());
  }

  @Override
  void forget() {
    if (borrowed) {
      provider.borrowed.remove(handle, this);
    } else {
      provider.open.remove(this);
      provider.live.contexts.decrementAndGet();
    }
  }

  @Override
  public RdmaDevice device() {
    return device;
  }

  @Override
  public DeviceAttributes queryDevice() {
    DeviceAttributes a = attributes;
    if (a != null) return a;
    checkOpen("ibv_query_device");
    synchronized (this) {
      if (attributes != null) return attributes;
      long p = Verbs.scratch(Layout.DEVICE_ATTR_SIZE);
      Verbs.queryDevice(handle, p);
      String fw = NativeProvider.cString(p + Layout.DEVICE_ATTR_FW_VER, Layout.DEVICE_ATTR_FW_VER_LEN);
      long guid = Long.reverseBytes(NativeMemory.getLong(p + Layout.DEVICE_ATTR_NODE_GUID));
      long maxMrSize = NativeMemory.getLong(p + Layout.DEVICE_ATTR_MAX_MR_SIZE);
      if (maxMrSize < 0) maxMrSize = Long.MAX_VALUE; // a u64 of 2^64 - 1: no limit
      int maxQp = i(p, Layout.DEVICE_ATTR_MAX_QP);
      int maxQpWr = i(p, Layout.DEVICE_ATTR_MAX_QP_WR);
      int flags = i(p, Layout.DEVICE_ATTR_DEVICE_CAP_FLAGS);
      int maxSge = i(p, Layout.DEVICE_ATTR_MAX_SGE);
      int maxCq = i(p, Layout.DEVICE_ATTR_MAX_CQ);
      int maxCqe = i(p, Layout.DEVICE_ATTR_MAX_CQE);
      int maxMr = i(p, Layout.DEVICE_ATTR_MAX_MR);
      int maxPd = i(p, Layout.DEVICE_ATTR_MAX_PD);
      int maxQpRdAtom = i(p, Layout.DEVICE_ATTR_MAX_QP_RD_ATOM);
      int maxQpInitRdAtom = i(p, Layout.DEVICE_ATTR_MAX_QP_INIT_RD_ATOM);
      int atomicCap = i(p, Layout.DEVICE_ATTR_ATOMIC_CAP);
      int maxMw = i(p, Layout.DEVICE_ATTR_MAX_MW);
      int maxSrq = i(p, Layout.DEVICE_ATTR_MAX_SRQ);
      int maxSrqWr = i(p, Layout.DEVICE_ATTR_MAX_SRQ_WR);
      int maxSrqSge = i(p, Layout.DEVICE_ATTR_MAX_SRQ_SGE);
      int ports = NativeMemory.getByte(p + Layout.DEVICE_ATTR_PHYS_PORT_CNT) & 0xff;
      int maxInline = probeMaxInlineData();
      capFlags = flags;
      attributes = new DeviceAttributes(fw, guid, maxMrSize, maxQp, maxQpWr, maxSge, maxCq,
          maxCqe, maxMr, maxPd, maxMw, maxSrq, maxSrqWr, maxSrqSge, maxQpRdAtom, maxQpInitRdAtom,
          maxInline, AtomicCapability.of(atomicCap), ports);
      return attributes;
    }
  }

  private static int i(long p, int off) {
    return NativeMemory.getInt(p + off);
  }

  /**
   * ibv_device_attr has no inline limit: find the largest max_inline_data an RC QP can be created
   * with (binary search over [0, 4096] with throw-away QPs, once per context).
   */
  private int probeMaxInlineData() {
    long pd = Verbs.allocPd(handle);
    long cq = 0;
    try {
      cq = Verbs.createCq(handle, 2, 0);
      if (canCreateQpWithInline(pd, cq, 4096)) return 4096;
      int lo = 0;
      int hi = 4096;
      if (!canCreateQpWithInline(pd, cq, 0)) return 0;
      while (hi - lo > 1) {
        int mid = (lo + hi) >>> 1;
        if (canCreateQpWithInline(pd, cq, mid)) lo = mid; else hi = mid;
      }
      return lo;
    } finally {
      if (cq != 0) Verbs.destroyCq(cq);
      Verbs.deallocPd(pd);
    }
  }

  private static boolean canCreateQpWithInline(long pd, long cq, int inline) {
    long a = Verbs.scratch(Layout.QP_INIT_ATTR_SIZE);
    NativeMemory.putLong(a + Layout.QP_INIT_ATTR_SEND_CQ, cq);
    NativeMemory.putLong(a + Layout.QP_INIT_ATTR_RECV_CQ, cq);
    long cap = a + Layout.QP_INIT_ATTR_CAP;
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_SEND_WR, 1);
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_RECV_WR, 1);
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_SEND_SGE, 1);
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_RECV_SGE, 1);
    NativeMemory.putInt(cap + Layout.QP_CAP_MAX_INLINE_DATA, inline);
    NativeMemory.putInt(a + Layout.QP_INIT_ATTR_QP_TYPE, QpType.RC.code);
    long qp = Verbs.tryCreateQp(pd, a);
    if (qp == 0) return false;
    Verbs.destroyQp(qp, "destroying a probe QP");
    return true;
  }

  /** Which optional features this device has ({@code transport} from its ibv_device). */
  Set<Feature> features(int transport) {
    DeviceAttributes a = queryDevice();
    int flags = capFlags;
    EnumSet<Feature> f = EnumSet.noneOf(Feature.class);
    boolean ibTransport = transport == 0;
    if (ibTransport) {
      f.add(Feature.UD);
      f.add(Feature.UC);
    }
    if (a.maxSrq() > 0) f.add(Feature.SRQ);
    boolean mwOps = Verbs.op(handle, Layout.CONTEXT_OPS_ALLOC_MW) != 0;
    if (mwOps && (flags & Layout.DEVICE_CAP_MEM_WINDOW) != 0) {
      if (Verbs.op(handle, Layout.CONTEXT_OPS_BIND_MW) != 0) f.add(Feature.MEMORY_WINDOW_TYPE_1);
      if ((flags & (Layout.DEVICE_CAP_MEM_WINDOW_TYPE_2A | Layout.DEVICE_CAP_MEM_WINDOW_TYPE_2B)) != 0) {
        f.add(Feature.MEMORY_WINDOW_TYPE_2);
      }
    }
    if (a.atomicCap() != AtomicCapability.NONE) f.add(Feature.ATOMICS);
    f.add(Feature.CONNECTION_MANAGER); // librdmacm works with every verbs device here
    if (probeCqResize()) f.add(Feature.CQ_RESIZE);
    if (probeRereg()) f.add(Feature.REREGISTER_MR);
    return f;
  }

  /** Whether ibv_resize_cq works here (a throw-away CQ). */
  private boolean probeCqResize() {
    long cq = Verbs.createCq(handle, 2, 0);
    try {
      Verbs.resizeCq(cq, 8);
      return true;
    } catch (RdmaException e) {
      return false;
    } finally {
      Verbs.destroyCq(cq);
    }
  }

  /**
   * Whether ibv_rereg_mr with CHANGE_TRANSLATION | CHANGE_ACCESS works here (rxe says
   * EOPNOTSUPP): a throw-away region over a throw-away page.
   */
  private boolean probeRereg() {
    long mem = NativeMemory.allocate(8192);
    long pd = Verbs.allocPd(handle);
    long mr = 0;
    try {
      mr = Verbs.regMr(pd, mem, 4096, 1);
      Verbs.reregMr(mr, Layout.REREG_MR_CHANGE_TRANSLATION | Layout.REREG_MR_CHANGE_ACCESS,
          mem + 4096, 4096, 1 | 4);
      return true;
    } catch (RdmaException e) {
      return false;
    } finally {
      if (mr != 0) Verbs.deregMr(mr);
      Verbs.deallocPd(pd);
      NativeMemory.free(mem);
    }
  }

  @Override
  public PortAttributes queryPort(int port) {
    checkOpen("ibv_query_port");
    long p = Verbs.scratch(Layout.PORT_ATTR_SIZE);
    Verbs.queryPort(handle, port, p);
    long maxMsg = NativeMemory.getInt(p + Layout.PORT_ATTR_MAX_MSG_SZ) & 0xffffffffL;
    return new PortAttributes(
        PortState.of(i(p, Layout.PORT_ATTR_STATE)),
        Mtu.of(i(p, Layout.PORT_ATTR_MAX_MTU)),
        Mtu.of(i(p, Layout.PORT_ATTR_ACTIVE_MTU)),
        i(p, Layout.PORT_ATTR_GID_TBL_LEN),
        u16(p + Layout.PORT_ATTR_LID),
        LinkLayer.of(NativeMemory.getByte(p + Layout.PORT_ATTR_LINK_LAYER) & 0xff),
        maxMsg);
  }

  @Override
  public PortCounters queryPortCounters(int port) {
    checkOpen("ibv_query_port");
    // the port must exist (EINVAL as for queryPort); sysfs alone would just read nothing
    Verbs.queryPort(handle, port, Verbs.scratch(Layout.PORT_ATTR_SIZE));
    return sysfs.read(device.name(), port);
  }

  @Override
  public Gid queryGid(int port, int index) {
    checkOpen("ibv_query_gid");
    long p = Verbs.scratch(Layout.GID_SIZE);
    Verbs.queryGid(handle, port, index, p);
    byte[] raw = new byte[Layout.GID_SIZE];
    NativeMemory.copyToArray(p, raw, 0, raw.length);
    return Gid.of(raw);
  }

  /**
   * The index of {@code gid} in {@code port}'s GID table, or -1. Where the table holds it twice
   * (RoCE v1 and v2 entries of one address, as hardware RoCE devices do), the RoCE v2 one: the
   * connection manager's default type (rxe has v2 entries only). The table is read from its
   * start, so a match is found after a few entries.
   */
  int gidIndexOf(int port, Gid gid) {
    int length = queryPort(port).gidTableLength();
    int v1 = -1;
    for (int i = 0; i < length; i++) {
      Gid g;
      try {
        g = queryGid(port, i);
      } catch (RdmaException e) {
        continue;
      }
      if (!g.equals(gid)) continue;
      String type = gidType(port, i);
      if (type == null || !type.contains("v1")) return i;
      if (v1 < 0) v1 = i;
    }
    return v1;
  }

  /** The type sysfs gives GID {@code index} ("RoCE v2", "IB/RoCE v1"), or null. */
  private String gidType(int port, int index) {
    try {
      java.nio.file.Path p = java.nio.file.Path.of("/sys/class/infiniband", device.name(), "ports",
          String.valueOf(port), "gid_attrs", "types", String.valueOf(index));
      return java.nio.file.Files.readString(p).trim();
    } catch (java.io.IOException | RuntimeException e) {
      return null;
    }
  }

  @Override
  public ProtectionDomain allocPd() {
    checkOpen("ibv_alloc_pd");
    NativePd pd = new NativePd(this, Verbs.allocPd(handle));
    provider.live.pds.incrementAndGet();
    return pd;
  }

  @Override
  public CompletionChannel createCompletionChannel() {
    checkOpen("ibv_create_comp_channel");
    return new NativeChannel(this, Verbs.createCompChannel(handle));
  }

  @Override
  public CompletionQueue createCq(int cqe, CompletionChannel channel) {
    checkOpen("ibv_create_cq");
    NativeChannel ch = null;
    if (channel != null) {
      Checks.sameContext(channel instanceof NativeChannel c && c.context == this,
          "ibv_create_cq");
      ch = (NativeChannel) channel;
      ch.checkOpen("ibv_create_cq");
    }
    Checks.cqEntries(cqe, queryDevice().maxCqe());
    provider.maps.beforeCreating("ibv_create_cq", "a CQ of " + cqe + " entries");
    long cq = Verbs.createCq(handle, cqe, ch == null ? 0 : ch.handle);
    NativeCq c = new NativeCq(this, ch, cq);
    provider.live.cqs.incrementAndGet();
    return c;
  }

  @Override
  public AsyncEvent nextAsyncEvent(Duration timeout) {
    checkOpen("ibv_get_async_event");
    long deadline = timeout == null ? 0 : System.nanoTime() + Math.max(0, timeout.toNanos());
    while (true) {
      Duration left = timeout == null ? null : Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
      if (!Verbs.awaitReadable(asyncFd, left)) return null;
      synchronized (asyncLock) {
        // another thread may have taken it: read only what is there now, never block
        if (Verbs.awaitReadable(asyncFd, Duration.ZERO)) {
          long ev = Verbs.scratch(Layout.ASYNC_EVENT_SIZE);
          Verbs.getAsyncEvent(handle, ev);
          try {
            return toEvent(ev);
          } finally {
            Verbs.ackAsyncEvent(ev);
          }
        }
      }
      if (timeout != null && System.nanoTime() - deadline >= 0) return null;
    }
  }

  private AsyncEvent toEvent(long ev) {
    int code = NativeMemory.getInt(ev + Layout.ASYNC_EVENT_EVENT_TYPE);
    long element = NativeMemory.getLong(ev + Layout.ASYNC_EVENT_ELEMENT);
    AsyncEventType type = AsyncEventType.of(code);
    if (type.isQpEvent()) return AsyncEvent.ofQp(type, qpsByHandle.get(element));
    if (type.isPortEvent()) return AsyncEvent.ofPort(type, (int) element);
    switch (type) {
      case CQ_ERR: return AsyncEvent.ofCq(type, cqsByHandle.get(element));
      case SRQ_ERR:
      case SRQ_LIMIT_REACHED: return AsyncEvent.ofSrq(type, srqsByHandle.get(element));
      default: return AsyncEvent.ofDevice(type);
    }
  }

  @Override
  public String toString() {
    return "NativeDeviceContext[" + device.name() + "]";
  }

  static int u16(long address) {
    return (NativeMemory.getByte(address) & 0xff) | (NativeMemory.getByte(address + 1) & 0xff) << 8;
  }
}
