package dev.pekkordma.conformance;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;

/** An off-heap buffer and its registration; closes both. */
public final class Region implements AutoCloseable {
  public final OffHeapBuffer buffer;
  public final MemoryRegion mr;
  private boolean mrClosed;

  private Region(OffHeapBuffer buffer, MemoryRegion mr) {
    this.buffer = buffer;
    this.mr = mr;
  }

  public static Region of(ProtectionDomain pd, int length, int access) {
    OffHeapBuffer b = OffHeapBuffer.allocate(length);
    try {
      return new Region(b, pd.registerMemory(b, access));
    } catch (RuntimeException e) {
      b.close();
      throw e;
    }
  }

  public long address() {
    return buffer.address();
  }

  public long address(long offset) {
    return buffer.address() + offset;
  }

  public int length() {
    return buffer.length();
  }

  public int lkey() {
    return mr.lkey();
  }

  public int rkey() {
    return mr.rkey();
  }

  public Region fill(int value) {
    byte[] b = new byte[length()];
    java.util.Arrays.fill(b, (byte) value);
    buffer.put(0, b, 0, b.length);
    return this;
  }

  public Region put(int offset, byte[] data) {
    buffer.put(offset, data, 0, data.length);
    return this;
  }

  public byte[] get(int offset, int length) {
    byte[] b = new byte[length];
    buffer.get(offset, b, 0, length);
    return b;
  }

  public byte[] all() {
    return get(0, length());
  }

  public long getLong(int offset) {
    return buffer.getLong(offset);
  }

  public void putLong(int offset, long value) {
    buffer.putLong(offset, value);
  }

  /** Deregisters now (the buffer stays until {@link #close}). */
  public void closeMr() {
    if (!mrClosed) {
      mrClosed = true;
      mr.close();
    }
  }

  /** {@code length} bytes that differ with {@code seed} and never repeat within 251 bytes. */
  public static byte[] pattern(int length, int seed) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) b[i] = (byte) ((i * 7 + seed * 31 + 1) % 251);
    return b;
  }

  public static byte[] filled(int length, int value) {
    byte[] b = new byte[length];
    java.util.Arrays.fill(b, (byte) value);
    return b;
  }

  @Override
  public void close() {
    try {
      closeMr();
    } finally {
      buffer.close();
    }
  }
}
