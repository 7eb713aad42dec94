package dev.pekkordma.verbs;

import dev.pekkordma.memory.OffHeapBuffer;

/** A protection domain ({@code ibv_pd}): memory and queues in one PD may work together. */
public interface ProtectionDomain extends AutoCloseable {
  DeviceContext context();

  /** Registers {@code [address, address+length)} ({@code ibv_reg_mr}). */
  MemoryRegion registerMemory(long address, long length, int access);

  default MemoryRegion registerMemory(OffHeapBuffer buffer, int access) {
    return registerMemory(buffer.address(), buffer.length(), access);
  }

  MemoryWindow allocMemoryWindow(MemoryWindow.Type type);

  QueuePair createQp(QpInitAttributes attributes);

  SharedReceiveQueue createSrq(SrqAttributes attributes);

  AddressHandle createAddressHandle(AddressVector av);

  /** Deallocates; fails with EBUSY naming the MRs, QPs and others still in it. */
  @Override
  void close();
}
