package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;

/** {@code memory} as a region with keys, for tests whose QP only records and reads nothing. */
record FakeMr(OffHeapBuffer memory) implements MemoryRegion {
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
  public int lkey() {
    return 1;
  }

  @Override
  public int rkey() {
    return 2;
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
