package dev.pekkordma.memory;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import sun.misc.Unsafe;

/**
 * Raw access to native memory by address. Verbs name memory by virtual address, so both providers
 * (and the software provider's "NIC" in particular) read and write through here.
 */
public final class NativeMemory {
  private static final Unsafe UNSAFE;
  private static final long BUFFER_ADDRESS_OFFSET;

  static {
    try {
      Field f = Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      UNSAFE = (Unsafe) f.get(null);
      BUFFER_ADDRESS_OFFSET = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("address"));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private NativeMemory() {}

  /** The native address of a direct buffer's first byte (not its position). */
  public static long addressOf(ByteBuffer direct) {
    if (!direct.isDirect()) {
      throw new IllegalArgumentException("buffer is not direct: RDMA needs off-heap memory");
    }
    return UNSAFE.getLong(direct, BUFFER_ADDRESS_OFFSET);
  }

  /** Frees a buffer from {@link ByteBuffer#allocateDirect} now rather than at garbage collection. */
  public static void freeDirect(ByteBuffer direct) {
    UNSAFE.invokeCleaner(direct);
  }

  public static long allocate(long bytes) {
    return UNSAFE.allocateMemory(bytes);
  }

  public static void free(long address) {
    UNSAFE.freeMemory(address);
  }

  public static void zero(long address, long bytes) {
    if (bytes > 256) {
      UNSAFE.setMemory(address, bytes, (byte) 0);
      return;
    }
    // a work request's few words: setMemory is a call into the VM, plain stores are compiled
    long end = address + bytes;
    for (; address + 8 <= end; address += 8) UNSAFE.putLong(address, 0L);
    for (; address < end; address++) UNSAFE.putByte(address, (byte) 0);
  }

  public static void copy(long from, long to, long bytes) {
    UNSAFE.copyMemory(from, to, bytes);
  }

  public static void copyToArray(long from, byte[] to, int offset, int bytes) {
    UNSAFE.copyMemory(null, from, to, Unsafe.ARRAY_BYTE_BASE_OFFSET + offset, bytes);
  }

  public static void copyFromArray(byte[] from, int offset, long to, int bytes) {
    UNSAFE.copyMemory(from, Unsafe.ARRAY_BYTE_BASE_OFFSET + offset, null, to, bytes);
  }

  public static byte getByte(long address) {
    return UNSAFE.getByte(address);
  }

  public static void putByte(long address, byte value) {
    UNSAFE.putByte(address, value);
  }

  public static int getInt(long address) {
    return UNSAFE.getInt(address);
  }

  public static void putInt(long address, int value) {
    UNSAFE.putInt(address, value);
  }

  public static long getLong(long address) {
    return UNSAFE.getLong(address);
  }

  public static void putLong(long address, long value) {
    UNSAFE.putLong(address, value);
  }

  public static long getLongVolatile(long address) {
    return UNSAFE.getLongVolatile(null, address);
  }

  /** Atomic compare-and-swap on 8 aligned bytes; returns the value found before the swap. */
  public static long compareAndSwapLong(long address, long expected, long swap) {
    while (true) {
      long found = UNSAFE.getLongVolatile(null, address);
      if (found != expected) {
        return found;
      }
      if (UNSAFE.compareAndSwapLong(null, address, expected, swap)) {
        return found;
      }
    }
  }

  /** Atomic fetch-and-add on 8 aligned bytes; returns the value found before the add. */
  public static long fetchAndAddLong(long address, long add) {
    return UNSAFE.getAndAddLong(null, address, add);
  }
}
