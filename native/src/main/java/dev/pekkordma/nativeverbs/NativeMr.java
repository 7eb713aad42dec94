package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.OpenChildren;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** A memory region: {@code struct ibv_mr *} (address, length and keys read from it). */
final class NativeMr extends NativeResource implements MemoryRegion {
  final NativePd pd;
  private volatile int access;
  /** Type-1 windows bound to it through {@link NativeQp#bindMemoryWindow}. */
  final Set<NativeMw> boundWindows = ConcurrentHashMap.newKeySet();

  /** What the memory belongs to, kept reachable while registered (or null). */
  private final Object owner;

  NativeMr(NativePd pd, long mr, int access, Object owner) {
    super(mr, pd);
    this.pd = pd;
    this.access = access;
    this.owner = owner;
  }

  @Override int rank() { return 5; }
  @Override public String describe() { return "MR lkey 0x" + Integer.toHexString(lkey()); }
  @Override String destroyVerb() { return "ibv_dereg_mr"; }
  /**
   * Type-2 windows are bound by posted BIND_MW requests, which this class does not follow: rxe
   * then refuses the deregistration with EINVAL ({@code rxe_dereg_mr}: windows still bound).
   * While the PD has type-2 windows, that EINVAL is the region being in use, so EBUSY, as the
   * API (and the type-1 check above) says.
   */
  @Override
  void destroy() {
    try {
      Verbs.deregMr(handle);
    } catch (RdmaException e) {
      if (e.errno() != RdmaException.EINVAL || pd.type2Windows.get() == 0) throw e;
      throw new RdmaException("ibv_dereg_mr", RdmaException.EBUSY, describe()
          + " still has memory windows bound to it (the driver refused with EINVAL while its PD"
          + " has " + pd.type2Windows.get() + " type-2 window(s))");
    }
  }
  @Override void forget() { pd.context.provider.live.mrs.decrementAndGet(); }

  @Override
  void checkNotInUse() {
    boundWindows.removeIf(NativeResource::isClosed);
    if (!boundWindows.isEmpty()) {
      throw new RdmaException("ibv_dereg_mr", RdmaException.EBUSY,
          describe() + " still has memory windows bound to it: " + OpenChildren.names(boundWindows));
    }
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public long address() { return NativeMemory.getLong(handle + Layout.MR_ADDR); }
  @Override public long length() { return NativeMemory.getLong(handle + Layout.MR_LENGTH); }
  @Override public int lkey() { return NativeMemory.getInt(handle + Layout.MR_LKEY); }
  @Override public int rkey() { return NativeMemory.getInt(handle + Layout.MR_RKEY); }
  @Override public int access() { return access; }
  @Override public long handle() { return handle; }

  @Override
  public void reRegister(long address, long length, int access) {
    checkOpen("ibv_rereg_mr");
    Access.validate(access, "ibv_rereg_mr");
    Verbs.reregMr(handle, Layout.REREG_MR_CHANGE_TRANSLATION | Layout.REREG_MR_CHANGE_ACCESS,
        address, length, access);
    this.access = access;
  }

  @Override
  public String toString() {
    return describe() + " [0x" + Long.toHexString(address()) + ", +" + length() + ")";
  }
}
