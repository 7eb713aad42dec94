package dev.pekkordma.soft;

import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import java.util.concurrent.atomic.AtomicInteger;

final class SoftMr extends Closeable implements MemoryRegion {
  final SoftPd pd;
  private volatile long address;
  private volatile long length;
  private volatile int access;
  private volatile int key;
  private final int handle;
  final AtomicInteger boundWindows = new AtomicInteger();

  SoftMr(SoftPd pd, long address, long length, int access) {
    this.pd = pd;
    this.address = address;
    this.length = length;
    this.access = access;
    this.key = pd.device.memoryKeys.add(this);
    this.handle = pd.device.handles.add(this);
  }

  @Override
  String describe() {
    return "MR lkey=0x" + Integer.toHexString(key) + " [0x" + Long.toHexString(address) + ", +"
        + length + ")";
  }

  /** Whether {@code [addr, addr+len)} lies inside this region. */
  boolean covers(long addr, long len) {
    long a = address;
    return len >= 0 && addr >= a && addr + len <= a + length && addr + len >= addr;
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
    // a new key: remote peers holding the old rkey must lose access
    pd.device.memoryKeys.remove(key);
    address = newAddress;
    length = newLength;
    access = newAccess;
    key = pd.device.memoryKeys.add(this);
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    if (boundWindows.get() > 0) {
      reopen();
      throw new RdmaException("ibv_dereg_mr", RdmaException.EBUSY,
          describe() + " has " + boundWindows.get() + " memory windows bound to it");
    }
    pd.device.memoryKeys.remove(key);
    pd.device.handles.remove(handle);
    pd.forget(this);
    pd.device.provider.counters.mrs.decrementAndGet();
  }
}
