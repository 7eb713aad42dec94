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
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

final class SoftPd extends Closeable implements ProtectionDomain {
  final SoftContext context;
  final SoftDevice device;
  final int number;
  final Set<Object> children = ConcurrentHashMap.newKeySet();

  SoftPd(SoftContext context, int number) {
    this.context = context;
    this.device = context.device;
    this.number = number;
  }

  @Override
  String describe() {
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
    if (address == 0) {
      throw new RdmaException("ibv_reg_mr", RdmaException.EINVAL, "address is null");
    }
    if (length <= 0 || length > device.settings.maxMrSize) {
      throw new RdmaException("ibv_reg_mr", RdmaException.EINVAL, "length " + length
          + " is outside [1, " + device.settings.maxMrSize + "] (max_mr_size)");
    }
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

  void forget(Object child) {
    children.remove(child);
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    if (!children.isEmpty()) {
      reopen();
      throw new RdmaException("ibv_dealloc_pd", RdmaException.EBUSY,
          describe() + " still has " + SoftContext.describeAll(children));
    }
    context.forget(this);
    device.provider.counters.pds.decrementAndGet();
  }
}
