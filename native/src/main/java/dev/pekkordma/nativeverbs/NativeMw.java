package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.ProtectionDomain;

/** A memory window: {@code struct ibv_mw *}; allocated and freed through the context's ops. */
final class NativeMw extends NativeResource implements MemoryWindow {
  final NativePd pd;
  private final Type type;
  /** The region a type-1 bind last bound it to, or null. */
  volatile NativeMr boundTo;

  NativeMw(NativePd pd, long mw, Type type) {
    super(mw, pd);
    this.pd = pd;
    this.type = type;
  }

  @Override int rank() { return 2; }
  @Override public String describe() { return "MW type " + type.code + " rkey 0x" + Integer.toHexString(rkey()); }
  @Override String destroyVerb() { return "ibv_dealloc_mw"; }

  @Override
  void destroy() {
    Verbs.deallocMw(pd.context.handle, handle);
    NativeMr mr = boundTo;
    if (mr != null) mr.boundWindows.remove(this);
  }

  @Override
  void forget() {
    if (type == Type.TYPE_2) pd.type2Windows.decrementAndGet();
    pd.context.provider.live.mws.decrementAndGet();
  }

  @Override public ProtectionDomain pd() { return pd; }
  @Override public Type type() { return type; }
  @Override public int rkey() { return NativeMemory.getInt(handle + Layout.MW_RKEY); }
  @Override public long handle() { return handle; }

  @Override
  public String toString() {
    return describe();
  }
}
