package dev.pekkordma.memory;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A block of native memory owned by the application, suitable for memory registration. Closing it
 * frees the memory at once; deregister every region over it first.
 */
public final class OffHeapBuffer implements AutoCloseable {
  private final ByteBuffer buffer;
  private final long address;
  private final AtomicBoolean freed = new AtomicBoolean();

  private OffHeapBuffer(ByteBuffer buffer) {
    this.buffer = buffer;
    this.address = NativeMemory.addressOf(buffer);
  }

  /**
   * Allocates {@code length} zeroed bytes (at most 2 GiB - 1: register several for more); past
   * the JVM's direct memory limit, fails with {@link DirectMemoryExhaustedException}.
   */
  public static OffHeapBuffer allocate(long length) {
    if (length <= 0 || length > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "buffer length must be in [1, " + Integer.MAX_VALUE + "], was " + length);
    }
    ByteBuffer memory;
    try {
      memory = ByteBuffer.allocateDirect((int) length);
    } catch (OutOfMemoryError e) {
      // thrown before anything was allocated (the JVM's direct memory count is full), so
      // recoverable here, unlike an error that reaches Pekko
      throw new DirectMemoryExhaustedException("cannot allocate " + length + " bytes of direct"
          + " memory: " + e.getMessage() + " (the limit is -XX:MaxDirectMemorySize, by default"
          + " the maximum heap size)", e);
    }
    return new OffHeapBuffer(memory);
  }

  public long address() {
    checkOpen();
    return address;
  }

  public int length() {
    return buffer.capacity();
  }

  /** A ByteBuffer view of {@code [offset, offset+len)}; valid until this buffer is closed. */
  public ByteBuffer view(int offset, int len) {
    checkRange(offset, len);
    return buffer.slice(offset, len);
  }

  public void put(long offset, byte[] src, int srcOffset, int len) {
    checkRange(offset, len);
    NativeMemory.copyFromArray(src, srcOffset, address + offset, len);
  }

  public void get(long offset, byte[] dst, int dstOffset, int len) {
    checkRange(offset, len);
    NativeMemory.copyToArray(address + offset, dst, dstOffset, len);
  }

  public long getLong(long offset) {
    checkRange(offset, 8);
    return NativeMemory.getLong(address + offset);
  }

  public void putLong(long offset, long value) {
    checkRange(offset, 8);
    NativeMemory.putLong(address + offset, value);
  }

  private void checkRange(long offset, long len) {
    checkOpen();
    if (offset < 0 || len < 0 || offset + len > buffer.capacity()) {
      throw new IndexOutOfBoundsException(
          "range [" + offset + ", " + (offset + len) + ") outside buffer of "
              + buffer.capacity() + " bytes");
    }
  }

  private void checkOpen() {
    if (freed.get()) {
      throw new IllegalStateException(
          "off-heap buffer of " + buffer.capacity() + " bytes is already freed");
    }
  }

  @Override
  public void close() {
    if (freed.compareAndSet(false, true)) {
      NativeMemory.freeDirect(buffer);
    }
  }
}
