package dev.pekkordma.nativeverbs;

import com.kenai.jffi.CallContext;
import com.kenai.jffi.CallingConvention;
import com.kenai.jffi.Invoker;
import com.kenai.jffi.LastError;
import com.kenai.jffi.Type;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.nativeverbs.ffi.LibC;
import dev.pekkordma.nativeverbs.ffi.LibIbverbs;
import dev.pekkordma.nativeverbs.ffi.LibRdmacm;
import dev.pekkordma.verbs.RdmaException;
import java.time.Duration;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Runtime;

/**
 * Every native call of the native provider passes through here: libibverbs.so.1 and
 * librdmacm.so.1 (and poll(2), strerror(3), getrlimit(2) from libc) bound with jnr-ffi, and the
 * verbs that verbs.h defines as static inline functions (post send/recv, poll and arm a CQ,
 * memory windows), called through the function pointers of the context's {@code ops} table with
 * jffi's {@link Invoker}.
 *
 * <p>Pointers are Java {@code long}s. Methods throw {@link RdmaException} naming the verb and the
 * errno's text, except the data-path ones ({@link #pollCq}, {@link #post} ...) which return
 * the provider's status for the caller to report without allocating on success.
 */
final class Verbs {
  private Verbs() {}

  private static final LibIbverbs IBV;
  private static final Runtime IBV_RUNTIME;
  private static final Throwable IBV_ERROR;
  private static final LibC LIBC;
  private static volatile LibRdmacm rdmacm;
  private static volatile Throwable rdmacmError;

  static {
    LibIbverbs ibv = null;
    Runtime rt = null;
    Throwable error = null;
    LibC libc = null;
    try {
      libc = LibraryLoader.create(LibC.class).failImmediately().load("c");
      ibv = LibraryLoader.create(LibIbverbs.class).failImmediately().load("libibverbs.so.1");
      rt = Runtime.getRuntime(ibv);
    } catch (Throwable t) {
      error = t;
      ibv = null;
    }
    IBV = ibv;
    IBV_RUNTIME = rt;
    IBV_ERROR = error;
    LIBC = libc;
  }

  /** Whether libibverbs.so.1 loaded. */
  public static boolean available() {
    return IBV != null;
  }

  /** Why libibverbs.so.1 did not load, or null. */
  public static Throwable loadError() {
    return IBV_ERROR;
  }

  static LibIbverbs ibv() {
    if (IBV == null) {
      throw new RdmaException("dlopen", RdmaException.ENOENT,
          "libibverbs.so.1 could not be loaded (" + IBV_ERROR + "); install Debian's libibverbs1"
              + " and ibverbs-providers", IBV_ERROR);
    }
    return IBV;
  }

  private static volatile boolean cmUsed;

  /**
   * Whether this process created a CM event channel (librdmacm then opens device contexts of its
   * own and keeps them open).
   */
  public static boolean cmUsed() {
    return cmUsed;
  }

  /** Whether librdmacm.so.1 loads. */
  public static boolean rdmacmAvailable() {
    try {
      rdmacm();
      return true;
    } catch (RdmaException e) {
      return false;
    }
  }

  /** librdmacm, loaded on first use. */
  static LibRdmacm rdmacm() {
    LibRdmacm r = rdmacm;
    if (r != null) return r;
    synchronized (Verbs.class) {
      if (rdmacm != null) return rdmacm;
      if (rdmacmError == null) {
        try {
          ibv();
          rdmacm = LibraryLoader.create(LibRdmacm.class).failImmediately().load("librdmacm.so.1");
          return rdmacm;
        } catch (Throwable t) {
          rdmacmError = t;
        }
      }
      throw new RdmaException("dlopen", RdmaException.ENOENT,
          "librdmacm.so.1 could not be loaded (" + rdmacmError + "); install Debian's librdmacm1",
          rdmacmError);
    }
  }

  // ---------------------------------------------------------------- errors

  /** The errno the last native call on this thread left. */
  public static int errno() {
    return IBV_RUNTIME != null ? IBV_RUNTIME.getLastError() : LastError.getInstance().get();
  }

  public static String strerror(int errno) {
    if (LIBC == null) return "errno " + errno;
    try {
      return LIBC.strerror(errno);
    } catch (Throwable t) {
      return "errno " + errno;
    }
  }

  /** An exception for {@code verb} failing with {@code errno} while doing {@code what}. */
  public static RdmaException fail(String verb, int errno, String what) {
    int e = Math.abs(errno);
    if (e == 0) e = RdmaException.EIO;
    return new RdmaException(verb, e, what + ": " + strerror(e));
  }

  /** Checks a verb that returns 0 or an errno (or -1 with errno set). */
  static void check(String verb, int rc, String what) {
    if (rc != 0) {
      throw fail(verb, rc == -1 ? errno() : rc, what);
    }
  }

  /** Checks a verb that returns a pointer or NULL with errno set. */
  static long checkPointer(String verb, long p, String what) {
    if (p == 0) {
      throw fail(verb, errno(), what);
    }
    return p;
  }

  // ---------------------------------------------------------------- scratch memory

  /**
   * A per-thread block of native memory for out-parameters and attribute structs of the calls
   * made on that thread (they never nest), so that calls need no allocation.
   */
  public static final int SCRATCH_SIZE = 1024;

  private static final ThreadLocal<Long> SCRATCH = ThreadLocal.withInitial(() -> {
    long a = NativeMemory.allocate(SCRATCH_SIZE);
    NativeMemory.zero(a, SCRATCH_SIZE);
    return a;
  });

  /** This thread's scratch block, {@code bytes} of it zeroed. */
  static long scratch(int bytes) {
    long a = SCRATCH.get();
    NativeMemory.zero(a, bytes);
    return a;
  }

  // ---------------------------------------------------------------- libibverbs

  static long getDeviceList() {
    long list = ibv().ibv_get_device_list(0);
    if (list == 0) {
      int e = errno();
      // ENOSYS: the kernel has no uverbs at all; that means "no devices" to us
      if (e == 38 || e == RdmaException.ENODEV || e == RdmaException.ENOENT) return 0;
      throw fail("ibv_get_device_list", e, "listing RDMA devices");
    }
    return list;
  }

  static void freeDeviceList(long list) {
    if (list != 0) ibv().ibv_free_device_list(list);
  }

  static String deviceName(long device) {
    return ibv().ibv_get_device_name(device);
  }

  /** The node GUID in host order (as ibv_devices prints it). */
  static long deviceGuid(long device) {
    return Long.reverseBytes(ibv().ibv_get_device_guid(device));
  }

  static long openDevice(long device, String name) {
    return checkPointer("ibv_open_device", ibv().ibv_open_device(device), "opening " + name);
  }

  static void closeDevice(long context, String name) {
    check("ibv_close_device", ibv().ibv_close_device(context), "closing " + name);
  }

  static void queryDevice(long context, long attr) {
    check("ibv_query_device", ibv().ibv_query_device(context, attr), "querying the device");
  }

  static void queryPort(long context, int port, long attr) {
    check("ibv_query_port", ibv().ibv_query_port(context, (byte) port, attr),
        "querying port " + port);
  }

  static void queryGid(long context, int port, int index, long gid) {
    check("ibv_query_gid", ibv().ibv_query_gid(context, (byte) port, index, gid),
        "reading GID index " + index + " of port " + port);
  }

  static long allocPd(long context) {
    return checkPointer("ibv_alloc_pd", ibv().ibv_alloc_pd(context), "allocating a PD");
  }

  static void deallocPd(long pd) {
    check("ibv_dealloc_pd", ibv().ibv_dealloc_pd(pd), "deallocating a PD");
  }

  static long regMr(long pd, long addr, long length, int access) {
    long mr = ibv().ibv_reg_mr(pd, addr, length, access);
    if (mr != 0) return mr;
    int e = errno();
    String what = "registering " + length + " bytes at 0x" + Long.toHexString(addr);
    if (e == RdmaException.ENOMEM || e == RdmaException.EPERM || e == RdmaException.EAGAIN) {
      long limit = memlockLimit();
      if (limit >= 0) {
        what += "; the locked-memory limit (ulimit -l) is " + (limit / 1024) + " KiB"
            + " and registration pins every page: raise it (ulimit -l unlimited, memlock in"
            + " /etc/security/limits.conf, LimitMEMLOCK= for a systemd unit, --ulimit memlock=-1"
            + " for a container)";
      }
    }
    throw fail("ibv_reg_mr", e, what);
  }

  /** RLIMIT_MEMLOCK's soft limit in bytes, -1 for unlimited or unknown. */
  public static long memlockLimit() {
    if (LIBC == null) return -1;
    long r = scratch(Layout.RLIMIT_SIZE);
    if (LIBC.getrlimit(Layout.RLIMIT_MEMLOCK, r) != 0) return -1;
    return NativeMemory.getLong(r);
  }

  static void reregMr(long mr, int flags, long addr, long length, int access) {
    int rc = ibv().ibv_rereg_mr(mr, flags, 0, addr, length, access);
    if (rc != 0) {
      int e = errno();
      throw fail("ibv_rereg_mr", e != 0 ? e : RdmaException.EINVAL,
          "re-registering as " + length + " bytes at 0x" + Long.toHexString(addr)
              + " (libibverbs code " + rc + ")");
    }
  }

  static void deregMr(long mr) {
    check("ibv_dereg_mr", ibv().ibv_dereg_mr(mr), "deregistering a memory region");
  }

  static long createCompChannel(long context) {
    return checkPointer("ibv_create_comp_channel", ibv().ibv_create_comp_channel(context),
        "creating a completion channel");
  }

  static void destroyCompChannel(long channel) {
    check("ibv_destroy_comp_channel", ibv().ibv_destroy_comp_channel(channel),
        "destroying a completion channel");
  }

  static long createCq(long context, int cqe, long channel) {
    return checkPointer("ibv_create_cq", ibv().ibv_create_cq(context, cqe, 0, channel, 0),
        "creating a CQ of " + cqe + " entries");
  }

  static void resizeCq(long cq, int cqe) {
    check("ibv_resize_cq", ibv().ibv_resize_cq(cq, cqe), "resizing a CQ to " + cqe + " entries");
  }

  static void destroyCq(long cq) {
    check("ibv_destroy_cq", ibv().ibv_destroy_cq(cq), "destroying a CQ");
  }

  /** Reads one event from a channel whose fd is readable; returns the CQ pointer. */
  static long getCqEvent(long channel) {
    long out = scratch(16);
    check("ibv_get_cq_event", ibv().ibv_get_cq_event(channel, out, out + 8),
        "reading a completion event");
    return NativeMemory.getLong(out);
  }

  static void ackCqEvents(long cq, int n) {
    ibv().ibv_ack_cq_events(cq, n);
  }

  static long createQp(long pd, long initAttr, String what) {
    return checkPointer("ibv_create_qp", ibv().ibv_create_qp(pd, initAttr), what);
  }

  /** Returns 0 or the errno (for probing without exceptions). */
  static long tryCreateQp(long pd, long initAttr) {
    return ibv().ibv_create_qp(pd, initAttr);
  }

  static void modifyQp(long qp, long attr, int mask, String what) {
    check("ibv_modify_qp", ibv().ibv_modify_qp(qp, attr, mask), what);
  }

  static void queryQp(long qp, long attr, int mask, long initAttr) {
    check("ibv_query_qp", ibv().ibv_query_qp(qp, attr, mask, initAttr), "querying a QP");
  }

  static void destroyQp(long qp, String what) {
    check("ibv_destroy_qp", ibv().ibv_destroy_qp(qp), what);
  }

  static long createSrq(long pd, long initAttr) {
    return checkPointer("ibv_create_srq", ibv().ibv_create_srq(pd, initAttr), "creating an SRQ");
  }

  static void modifySrq(long srq, long attr, int mask) {
    check("ibv_modify_srq", ibv().ibv_modify_srq(srq, attr, mask), "modifying an SRQ");
  }

  static void querySrq(long srq, long attr) {
    check("ibv_query_srq", ibv().ibv_query_srq(srq, attr), "querying an SRQ");
  }

  static void destroySrq(long srq) {
    check("ibv_destroy_srq", ibv().ibv_destroy_srq(srq), "destroying an SRQ");
  }

  static long createAh(long pd, long attr) {
    return checkPointer("ibv_create_ah", ibv().ibv_create_ah(pd, attr),
        "creating an address handle");
  }

  static void destroyAh(long ah) {
    check("ibv_destroy_ah", ibv().ibv_destroy_ah(ah), "destroying an address handle");
  }

  /**
   * ibv_detach_mcast of group {@code mgid}, {@code mlid}; its result is ignored: a QP no longer
   * attached is what the caller wants.
   */
  static void detachMulticast(long qp, byte[] mgid, int mlid) {
    long g = scratch(Layout.GID_SIZE);
    NativeMemory.copyFromArray(mgid, 0, g, Layout.GID_SIZE);
    ibv().ibv_detach_mcast(qp, g, (short) mlid);
  }

  /** Reads one async event (the fd must be readable) into {@code event} (16 bytes). */
  static void getAsyncEvent(long context, long event) {
    check("ibv_get_async_event", ibv().ibv_get_async_event(context, event),
        "reading an asynchronous event");
  }

  static void ackAsyncEvent(long event) {
    ibv().ibv_ack_async_event(event);
  }

  // ---------------------------------------------------------------- librdmacm

  static long createEventChannel() {
    cmUsed = true;
    return checkPointer("rdma_create_event_channel", rdmacm().rdma_create_event_channel(),
        "creating a CM event channel");
  }

  static void destroyEventChannel(long channel) {
    rdmacm().rdma_destroy_event_channel(channel);
  }

  /** A new id in port space {@code portSpace} (librdmacm's code), e.g. RDMA_PS_TCP. */
  static long createId(long channel, int portSpace, String what) {
    long out = scratch(8);
    check("rdma_create_id", rdmacm().rdma_create_id(channel, out, 0, portSpace), what);
    return NativeMemory.getLong(out);
  }

  static void destroyId(long id) {
    check("rdma_destroy_id", rdmacm().rdma_destroy_id(id), "destroying a CM id");
  }

  static void bindAddr(long id, long sockaddr, String what) {
    check("rdma_bind_addr", rdmacm().rdma_bind_addr(id, sockaddr), what);
  }

  static void listen(long id, int backlog) {
    check("rdma_listen", rdmacm().rdma_listen(id, backlog), "listening");
  }

  static void resolveAddr(long id, long src, long dst, int timeoutMs, String what) {
    check("rdma_resolve_addr", rdmacm().rdma_resolve_addr(id, src, dst, timeoutMs), what);
  }

  static void resolveRoute(long id, int timeoutMs) {
    check("rdma_resolve_route", rdmacm().rdma_resolve_route(id, timeoutMs), "resolving the route");
  }

  static void rdmaCreateQp(long id, long pd, long initAttr, String what) {
    check("rdma_create_qp", rdmacm().rdma_create_qp(id, pd, initAttr), what);
  }

  static void rdmaDestroyQp(long id) {
    rdmacm().rdma_destroy_qp(id);
  }

  static void connect(long id, long connParam) {
    check("rdma_connect", rdmacm().rdma_connect(id, connParam), "connecting");
  }

  static void accept(long id, long connParam) {
    check("rdma_accept", rdmacm().rdma_accept(id, connParam), "accepting");
  }

  static void reject(long id, long privateData, int length) {
    check("rdma_reject", rdmacm().rdma_reject(id, privateData, (byte) length), "rejecting");
  }

  static void disconnect(long id) {
    check("rdma_disconnect", rdmacm().rdma_disconnect(id), "disconnecting");
  }

  /**
   * rdma_join_multicast: 0, or the errno (librdmacm copies {@code addr}; {@code context} comes
   * back as the MULTICAST_JOIN or MULTICAST_ERROR event's param.ud.private_data).
   */
  static int joinMulticast(long id, long addr, long context) {
    int rc = rdmacm().rdma_join_multicast(id, addr, context);
    return rc == 0 ? 0 : rc == -1 ? Math.max(1, errno()) : Math.abs(rc);
  }

  /**
   * rdma_leave_multicast: detaches the id's QP and leaves; blocks until every event of the group
   * already reported is acknowledged (the channel's reader does that at once). 0 or the errno.
   */
  static int leaveMulticast(long id, long addr) {
    int rc = rdmacm().rdma_leave_multicast(id, addr);
    return rc == 0 ? 0 : rc == -1 ? Math.max(1, errno()) : Math.abs(rc);
  }

  /** Reads one CM event (the channel's fd must be readable); returns the rdma_cm_event pointer. */
  static long getCmEvent(long channel) {
    long out = scratch(8);
    check("rdma_get_cm_event", rdmacm().rdma_get_cm_event(channel, out), "reading a CM event");
    return NativeMemory.getLong(out);
  }

  /**
   * Has librdmacm re-read the device list: that is when it notices a removed device and closes
   * its own context of it (if no id uses it any more), which the kernel's removal waits for.
   */
  static void refreshCmDevices() {
    long list = rdmacm().rdma_get_devices(0);
    if (list != 0) rdmacm().rdma_free_devices(list);
  }

  static void ackCmEvent(long event) {
    check("rdma_ack_cm_event", rdmacm().rdma_ack_cm_event(event), "acknowledging a CM event");
  }

  // ---------------------------------------------------------------- the inline verbs (ops table)

  private static final Invoker INVOKER = Invoker.getInstance();
  /** int (*)(void *, int, void *): poll_cq. */
  private static final CallContext PTR_INT_PTR_TO_INT = CallContext.getCallContext(Type.SINT,
      new Type[] {Type.POINTER, Type.SINT, Type.POINTER}, CallingConvention.DEFAULT, false);
  /** int (*)(void *, int): req_notify_cq. */
  private static final CallContext PTR_INT_TO_INT = CallContext.getCallContext(Type.SINT,
      new Type[] {Type.POINTER, Type.SINT}, CallingConvention.DEFAULT, false);
  /** int (*)(void *, void *, void **): post_send, post_recv, post_srq_recv, bind_mw. */
  private static final CallContext PTR_PTR_PTR_TO_INT = CallContext.getCallContext(Type.SINT,
      new Type[] {Type.POINTER, Type.POINTER, Type.POINTER}, CallingConvention.DEFAULT, false);
  /** void *(*)(void *, int): alloc_mw; errno saved. */
  private static final CallContext PTR_INT_TO_PTR = CallContext.getCallContext(Type.POINTER,
      new Type[] {Type.POINTER, Type.SINT}, CallingConvention.DEFAULT, true);
  /** int (*)(void *): dealloc_mw. */
  private static final CallContext PTR_TO_INT = CallContext.getCallContext(Type.SINT,
      new Type[] {Type.POINTER}, CallingConvention.DEFAULT, false);

  /** The function pointer at {@code offset} in the {@code struct ibv_context} (its ops table). */
  static long op(long context, int offset) {
    return NativeMemory.getLong(context + offset);
  }

  /** ibv_poll_cq: the number of completions written to {@code wc}, or a negative error. */
  public static int pollCq(long fn, long cq, int max, long wc) {
    return (int) INVOKER.invokeN3(PTR_INT_PTR_TO_INT, fn, cq, max, wc);
  }

  /** ibv_req_notify_cq: 0 or an error. */
  public static int reqNotifyCq(long fn, long cq, boolean solicitedOnly) {
    return (int) INVOKER.invokeN2(PTR_INT_TO_INT, fn, cq, solicitedOnly ? 1 : 0);
  }

  /** ibv_post_send, ibv_post_recv and ibv_post_srq_recv: 0 or an errno; *badWr set on error. */
  public static int post(long fn, long queue, long firstWr, long badWr) {
    return (int) INVOKER.invokeN3(PTR_PTR_PTR_TO_INT, fn, queue, firstWr, badWr);
  }

  static long allocMw(long context, long pd, int type) {
    long fn = op(context, Layout.CONTEXT_OPS_ALLOC_MW);
    if (fn == 0) {
      throw fail("ibv_alloc_mw", RdmaException.EOPNOTSUPP,
          "the device's driver has no memory windows");
    }
    long mw = INVOKER.invokeN2(PTR_INT_TO_PTR, fn, pd, type);
    if (mw == 0) {
      throw fail("ibv_alloc_mw", LastError.getInstance().get(),
          "allocating a type-" + type + " memory window");
    }
    return mw;
  }

  static void deallocMw(long context, long mw) {
    long fn = op(context, Layout.CONTEXT_OPS_DEALLOC_MW);
    check("ibv_dealloc_mw", (int) INVOKER.invokeN1(PTR_TO_INT, fn, mw),
        "deallocating a memory window");
  }

  /** ibv_bind_mw after verbs.h's checks (done by the caller): 0 or an errno. */
  static int bindMw(long context, long qp, long mw, long mwBind) {
    long fn = op(context, Layout.CONTEXT_OPS_BIND_MW);
    if (fn == 0) return RdmaException.EOPNOTSUPP;
    return (int) INVOKER.invokeN3(PTR_PTR_PTR_TO_INT, fn, qp, mw, mwBind);
  }

  // ---------------------------------------------------------------- file descriptors

  /**
   * Waits until {@code fd} is readable, at most {@code timeout} (null: for ever), blocking in
   * poll(2) (no spinning). Returns whether it is readable.
   */
  static boolean awaitReadable(int fd, Duration timeout) {
    long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + clampNanos(timeout);
    while (true) {
      int ms;
      if (timeout == null) {
        ms = -1;
      } else {
        long left = deadline - System.nanoTime();
        if (left < 0) left = 0;
        ms = (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
      }
      long pfd = scratch(Layout.POLLFD_SIZE);
      NativeMemory.putInt(pfd + Layout.POLLFD_FD, fd);
      NativeMemory.putInt(pfd + Layout.POLLFD_EVENTS, Layout.POLLIN); // events=POLLIN, revents=0
      int rc = LIBC.poll(pfd, 1, ms);
      if (rc > 0) return true;
      if (rc == 0) {
        if (timeout == null || System.nanoTime() >= deadline) return false;
        continue;
      }
      int e = LIBC == null ? 0 : Runtime.getRuntime(LIBC).getLastError();
      if (e != 4) { // EINTR: retry
        throw fail("poll", e, "waiting on fd " + fd);
      }
    }
  }

  /** An eventfd(2) for waking a thread blocked in {@link #awaitReadableOrWoken}. */
  static int eventFd() {
    int fd = LIBC.eventfd(0, 0);
    if (fd < 0) throw fail("eventfd", Runtime.getRuntime(LIBC).getLastError(), "creating an eventfd");
    return fd;
  }

  static void wake(int eventFd) {
    long one = scratch(8);
    NativeMemory.putLong(one, 1);
    LIBC.write(eventFd, one, 8);
  }

  static void closeFd(int fd) {
    LIBC.close(fd);
  }

  /**
   * Blocks in poll(2) until {@code fd} is readable (true) or {@code wakeFd} is (false: someone
   * called {@link #wake}; the eventfd stays readable).
   */
  static boolean awaitReadableOrWoken(int fd, int wakeFd) {
    while (true) {
      long pfd = scratch(2 * Layout.POLLFD_SIZE);
      NativeMemory.putInt(pfd + Layout.POLLFD_FD, fd);
      NativeMemory.putInt(pfd + Layout.POLLFD_EVENTS, Layout.POLLIN);
      NativeMemory.putInt(pfd + Layout.POLLFD_SIZE + Layout.POLLFD_FD, wakeFd);
      NativeMemory.putInt(pfd + Layout.POLLFD_SIZE + Layout.POLLFD_EVENTS, Layout.POLLIN);
      int rc = LIBC.poll(pfd, 2, -1);
      if (rc > 0) {
        if ((NativeMemory.getInt(pfd + Layout.POLLFD_SIZE + Layout.POLLFD_EVENTS) >>> 16) != 0) {
          return false;
        }
        if ((NativeMemory.getInt(pfd + Layout.POLLFD_EVENTS) >>> 16) != 0) return true;
        continue;
      }
      int e = Runtime.getRuntime(LIBC).getLastError();
      if (rc < 0 && e != 4) throw fail("poll", e, "waiting on fd " + fd);
    }
  }

  private static long clampNanos(Duration d) {
    if (d.isNegative()) return 0;
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2;
    }
  }
}
