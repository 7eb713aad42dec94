package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.Checks;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;

/** A protection domain: {@code struct ibv_pd *}. */
final class NativePd extends NativeResource implements ProtectionDomain {
  final NativeDeviceContext context;
  /** Live type-2 windows: while there are any, posts look for BIND_MW requests. */
  final java.util.concurrent.atomic.AtomicInteger type2Windows =
      new java.util.concurrent.atomic.AtomicInteger();

  NativePd(NativeDeviceContext context, long pd) {
    super(pd, context);
    this.context = context;
  }

  @Override int rank() { return 10; }
  @Override public String describe() { return "PD 0x" + Long.toHexString(handle); }
  @Override String destroyVerb() { return "ibv_dealloc_pd"; }
  @Override void destroy() { Verbs.deallocPd(handle); }
  @Override void forget() { context.provider.live.pds.decrementAndGet(); }

  @Override
  public DeviceContext context() {
    return context;
  }

  @Override
  public MemoryRegion registerMemory(long address, long length, int access) {
    return register(address, length, access, null);
  }

  @Override
  public MemoryRegion registerMemory(dev.pekkordma.memory.OffHeapBuffer buffer, int access) {
    return register(buffer.address(), buffer.length(), access, buffer);
  }

  private MemoryRegion register(long address, long length, int access, Object owner) {
    checkOpen("ibv_reg_mr");
    Access.validate(access, "ibv_reg_mr");
    Checks.registration(address, length, context.queryDevice().maxMrSize());
    long mr = Verbs.regMr(handle, address, length, access);
    NativeMr m = new NativeMr(this, mr, access, owner);
    context.provider.live.mrs.incrementAndGet();
    return m;
  }

  @Override
  public MemoryWindow allocMemoryWindow(MemoryWindow.Type type) {
    checkOpen("ibv_alloc_mw");
    long mw = Verbs.allocMw(context.handle, handle, type.code);
    NativeMw w = new NativeMw(this, mw, type);
    if (type == MemoryWindow.Type.TYPE_2) type2Windows.incrementAndGet();
    context.provider.live.mws.incrementAndGet();
    return w;
  }

  @Override
  public QueuePair createQp(QpInitAttributes attributes) {
    checkOpen("ibv_create_qp");
    return NativeQp.create(this, attributes);
  }

  @Override
  public SharedReceiveQueue createSrq(SrqAttributes attributes) {
    checkOpen("ibv_create_srq");
    context.provider.maps.beforeCreating("ibv_create_srq", "an SRQ");
    long a = Verbs.scratch(Layout.SRQ_INIT_ATTR_SIZE);
    long attr = a + Layout.SRQ_INIT_ATTR_ATTR;
    NativeMemory.putInt(attr + Layout.SRQ_ATTR_MAX_WR, attributes.maxWr());
    NativeMemory.putInt(attr + Layout.SRQ_ATTR_MAX_SGE, attributes.maxSge());
    NativeMemory.putInt(attr + Layout.SRQ_ATTR_SRQ_LIMIT, attributes.limit());
    long srq = Verbs.createSrq(handle, a);
    NativeSrq s = new NativeSrq(this, srq);
    context.provider.live.srqs.incrementAndGet();
    return s;
  }

  @Override
  public AddressHandle createAddressHandle(AddressVector av) {
    checkOpen("ibv_create_ah");
    long a = Verbs.scratch(Layout.AH_ATTR_SIZE);
    NativeQp.writeAhAttr(a, av);
    long ah = Verbs.createAh(handle, a);
    NativeAh h = new NativeAh(this, ah, av);
    context.provider.live.ahs.incrementAndGet();
    return h;
  }

  @Override
  public String toString() {
    return describe();
  }
}
