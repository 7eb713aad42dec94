package dev.pekkordma.soft;

import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A memory region. Its fence makes deregistration and re-registration wait for copies in
 * progress: once {@link #close} returns, the provider neither reads nor writes the memory again,
 * so the application may free it.
 */
final class SoftMr extends Closeable implements MemoryRegion {
  final SoftPd pd;
  final AccessFence fence = new AccessFence();
  private volatile long address;
  private volatile long length;
  private volatile int access;
  private volatile int key;
  private final int handle;
  /** What the memory belongs to, kept reachable while registered (or null). */
  private final Object owner;
  final AtomicInteger boundWindows = new AtomicInteger();

  SoftMr(SoftPd pd, long address, long length, int access, Object owner) {
    this.pd = pd;
    this.owner = owner;
    this.address = address;
    this.length = length;
    this.access = access;
    this.key = pd.device.memoryKeys.add(this);
    this.handle = pd.device.handles.add(this);
  }

  @Override
  public String describe() {
    return "MR lkey=0x" + Integer.toHexString(key) + " [0x" + Long.toHexString(address) + ", +"
        + length + ")";
  }

  /** Whether {@code [addr, addr+len)} lies inside this region. */
  boolean covers(long addr, long len) {
    long a = address;
    return len >= 0 && addr >= a && addr + len <= a + length && addr + len >= addr;
  }

  /**
   * Adds {@code [addr, addr+len)} to {@code into} if this region grants {@code needed} access
   * (0: none needed) on it, fenced in the generation the check saw; false otherwise.
   */
  boolean grant(long addr, long len, int needed, Segments into) {
    int generation = fence.generation(); // before the fields: a re-registration after it fails
    if (isClosed() || !covers(addr, len) || (needed != 0 && (access & needed) == 0)) return false;
    into.add(addr, len, fence, generation);
    return true;
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public long address() { return address; }
  @Override public long length() { return length; }
  @Override public int lkey() { return key; }
  @Override public int rkey() { return key; }
  @Override public int access() { return access; }
  @Override public long handle() { return handle; }

  @Override
  public synchronized void reRegister(long newAddress, long newLength, int newAccess) {
    checkOpen("ibv_rereg_mr");
    if (newAddress == 0 || newLength <= 0 || newLength > pd.device.settings.maxMrSize) {
      throw new RdmaException("ibv_rereg_mr", RdmaException.EINVAL,
          describe() + ": address 0x" + Long.toHexString(newAddress) + " length " + newLength
              + " is not a valid range (max_mr_size " + pd.device.settings.maxMrSize + ")");
    }
    Access.validate(newAccess, "ibv_rereg_mr");
    if (boundWindows.get() > 0) {
      throw new RdmaException("ibv_rereg_mr", RdmaException.EBUSY,
          describe() + " has " + boundWindows.get() + " memory windows bound");
    }
    // a new key: remote peers holding the old rkey must lose access, and copies checked
    // against the old range must not land in the new one
    pd.device.memoryKeys.remove(key);
    fence.close();
    address = newAddress;
    length = newLength;
    access = newAccess;
    key = pd.device.memoryKeys.add(this);
    fence.reopen();
  }

  @Override
  public synchronized void close() {
    if (!markClosed()) return;
    if (boundWindows.get() > 0) {
      reopen();
      throw new RdmaException("ibv_dereg_mr", RdmaException.EBUSY,
          describe() + " has " + boundWindows.get() + " memory windows bound to it");
    }
    pd.device.memoryKeys.remove(key);
    fence.close(); // copies in progress end; none starts: the memory may be freed after this
    pd.device.handles.remove(handle);
    pd.forget(this);
    pd.device.provider.counters.mrs.decrementAndGet();
  }
}
