package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;

/** {@code memory} as a region with keys, for tests whose QP reads nothing, or checks keys. */
record FakeMr(OffHeapBuffer memory, int lkey, int rkey) implements MemoryRegion {
  FakeMr(OffHeapBuffer memory) {
    this(memory, 1, 2);
  }

  @Override
  public ProtectionDomain pd() {
    throw new UnsupportedOperationException();
  }

  @Override
  public long address() {
    return memory.address();
  }

  @Override
  public long length() {
    return memory.length();
  }

  @Override
  public int access() {
    return 0;
  }

  @Override
  public long handle() {
    return 0;
  }

  @Override
  public void reRegister(long address, long length, int access) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void close() {}
}
