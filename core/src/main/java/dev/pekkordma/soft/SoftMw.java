package dev.pekkordma.soft;

import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;

/**
 * A memory window: a narrower view of a bound region under its own rkey. Its fence makes
 * rebinding, invalidation and destruction wait for copies in progress through the old binding.
 */
final class SoftMw extends Closeable implements MemoryWindow {
  final SoftPd pd;
  final AccessFence fence = new AccessFence();
  final Type type;
  private final int handle;
  private volatile int rkey;
  // the binding: valid while region != null
  volatile SoftMr region;
  volatile long address;
  volatile long length;
  volatile int access;
  volatile SoftQp boundQp; // type 2 windows are usable only through the QP that bound them

  SoftMw(SoftPd pd, Type type) {
    this.pd = pd;
    this.type = type;
    this.rkey = pd.device.memoryKeys.add(this);
    this.handle = pd.device.handles.add(this);
  }

  @Override
  public String describe() {
    return "MW type " + type.code + " rkey=0x" + Integer.toHexString(rkey);
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public Type type() { return type; }
  @Override public int rkey() { return rkey; }
  @Override public long handle() { return handle; }

  boolean covers(long addr, long len) {
    return region != null && len >= 0 && addr >= address && addr + len <= address + length
        && addr + len >= addr;
  }

  /**
   * Adds {@code [addr, addr+len)} to {@code into} if the binding grants {@code needed} on it to
   * {@code qp} (type 2 windows: only the QP that bound them), fenced by the window and its region
   * in the generations the check saw; false otherwise.
   */
  boolean grant(long addr, long len, int needed, SoftQp qp, Segments into) {
    int generation = fence.generation();
    SoftMr mr = region;
    if (mr == null || isClosed() || (access & needed) == 0 || !covers(addr, len)) return false;
    if (type == Type.TYPE_2 && boundQp != qp) return false;
    int regionGeneration = mr.fence.generation();
    if (mr.isClosed() || !mr.covers(addr, len)) return false;
    into.add(addr, len, mr.fence, regionGeneration, fence, generation);
    return true;
  }

  /** Binds (length > 0) or unbinds, under the rkey {@code newRkey}. */
  synchronized void bind(int newRkey, SoftMr mr, long addr, long len, int acc, SoftQp qp) {
    fence.close(); // copies through the old binding end first
    try {
      SoftMr old = region;
      if (old != null) old.boundWindows.decrementAndGet();
      rkey = pd.device.memoryKeys.retag(rkey, newRkey);
      if (len == 0 || mr == null) {
        region = null;
        return;
      }
      mr.boundWindows.incrementAndGet();
      address = addr;
      length = len;
      access = acc;
      boundQp = qp;
      region = mr;
    } finally {
      fence.reopen();
    }
  }

  synchronized void invalidate() {
    fence.close();
    SoftMr old = region;
    if (old != null) old.boundWindows.decrementAndGet();
    region = null;
    fence.reopen();
  }

  @Override
  public synchronized void close() {
    if (!markClosed()) return;
    fence.close();
    SoftMr old = region;
    if (old != null) old.boundWindows.decrementAndGet();
    region = null;
    pd.device.memoryKeys.remove(rkey);
    pd.device.handles.remove(handle);
    pd.forget(this);
    pd.device.provider.counters.mws.decrementAndGet();
  }

  static RdmaException notType1(SoftMw mw) {
    return new RdmaException("ibv_bind_mw", RdmaException.EINVAL,
        mw.describe() + " is not a type-1 window: bind type 2 with a BIND_MW send request");
  }
}
