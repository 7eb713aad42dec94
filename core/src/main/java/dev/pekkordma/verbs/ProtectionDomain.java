package dev.pekkordma.verbs;

import dev.pekkordma.memory.OffHeapBuffer;

/** A protection domain ({@code ibv_pd}): memory and queues in one PD may work together. */
public interface ProtectionDomain extends AutoCloseable {
  DeviceContext context();

  /**
   * Registers {@code [address, address+length)} ({@code ibv_reg_mr}). The memory must stay
   * allocated until the region is closed; once {@link MemoryRegion#close} returns, the provider
   * touches it no more and it may be freed.
   */
  MemoryRegion registerMemory(long address, long length, int access);

  /**
   * Registers the whole of {@code buffer}. The region keeps the buffer reachable while it is
   * registered, so the garbage collector cannot free memory a peer may still write.
   */
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
