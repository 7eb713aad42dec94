package dev.pekkordma.soft;

import dev.pekkordma.memory.OffHeapBuffer;
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
import dev.pekkordma.verbs.spi.Described;
import dev.pekkordma.verbs.spi.OpenChildren;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;

final class SoftPd extends Closeable implements ProtectionDomain {
  final SoftContext context;
  final SoftDevice device;
  final int number;
  final OpenChildren children = new OpenChildren();

  SoftPd(SoftContext context, int number) {
    this.context = context;
    this.device = context.device;
    this.number = number;
  }

  @Override
  public String describe() {
    return "PD " + number + " of " + device.info.name();
  }

  @Override
  public DeviceContext context() {
    return context;
  }

  @Override
  public MemoryRegion registerMemory(long address, long length, int access) {
    return register(address, length, access, null);
  }

  @Override
  public MemoryRegion registerMemory(OffHeapBuffer buffer, int access) {
    return register(buffer.address(), buffer.length(), access, buffer);
  }

  private MemoryRegion register(long address, long length, int access, Object owner) {
    checkOpen("ibv_reg_mr");
    Checks.registration(address, length, device.settings.maxMrSize);
    Access.validate(access, "ibv_reg_mr");
    SoftMr mr = new SoftMr(this, address, length, access, owner);
    children.add(mr);
    device.provider.counters.mrs.incrementAndGet();
    return mr;
  }

  @Override
  public MemoryWindow allocMemoryWindow(MemoryWindow.Type type) {
    checkOpen("ibv_alloc_mw");
    if (type == null) throw new RdmaException("ibv_alloc_mw", RdmaException.EINVAL, "type is null");
    SoftMw mw = new SoftMw(this, type);
    children.add(mw);
    device.provider.counters.mws.incrementAndGet();
    return mw;
  }

  @Override
  public QueuePair createQp(QpInitAttributes attributes) {
    checkOpen("ibv_create_qp");
    if (attributes == null) {
      throw new RdmaException("ibv_create_qp", RdmaException.EINVAL, "attributes are null");
    }
    SoftQp qp = SoftQp.create(this, attributes);
    children.add(qp);
    device.provider.counters.qps.incrementAndGet();
    return qp;
  }

  @Override
  public SharedReceiveQueue createSrq(SrqAttributes attributes) {
    checkOpen("ibv_create_srq");
    SoftSrq srq = new SoftSrq(this, attributes);
    children.add(srq);
    device.provider.counters.srqs.incrementAndGet();
    return srq;
  }

  @Override
  public AddressHandle createAddressHandle(AddressVector av) {
    checkOpen("ibv_create_ah");
    if (av == null) throw new RdmaException("ibv_create_ah", RdmaException.EINVAL, "address vector is null");
    if (av.portNum() != 1) {
      throw new RdmaException("ibv_create_ah", RdmaException.EINVAL,
          "port " + av.portNum() + " does not exist (the device has port 1)");
    }
    if (!av.global() || av.dgid() == null) {
      throw new RdmaException("ibv_create_ah", RdmaException.EINVAL,
          "the link layer is Ethernet (RoCE): the address vector needs global=true and a GID");
    }
    SoftAh ah = new SoftAh(this, av);
    children.add(ah);
    device.provider.counters.ahs.incrementAndGet();
    return ah;
  }

  void forget(Described child) {
    children.remove(child);
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    try {
      children.requireNone("ibv_dealloc_pd", this);
    } catch (RdmaException busy) {
      reopen();
      throw busy;
    }
    context.forget(this);
    device.provider.counters.pds.decrementAndGet();
  }
}
