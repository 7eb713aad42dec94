package dev.pekkordma.verbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;

/**
 * A reusable batch of receive work requests in off-heap memory, laid out as {@code struct
 * ibv_recv_wr} (32 bytes each) followed by their {@code struct ibv_sge} lists.
 */
public final class RecvRequests implements AutoCloseable {
  public static final int WR_SIZE = 32;
  public static final int OFF_WR_ID = 0;
  public static final int OFF_NEXT = 8;
  public static final int OFF_SG_LIST = 16;
  public static final int OFF_NUM_SGE = 24;
  public static final int SGE_SIZE = 16;

  private final OffHeapBuffer memory;
  private final long base;
  private final long sgeBase;
  private final int capacity;
  private final int maxSge;
  private int size;

  public RecvRequests(int capacity, int maxSgePerRequest) {
    if (capacity <= 0) throw new IllegalArgumentException("capacity must be positive: " + capacity);
    if (maxSgePerRequest <= 0) {
      throw new IllegalArgumentException("maxSgePerRequest must be positive: " + maxSgePerRequest);
    }
    this.capacity = capacity;
    this.maxSge = maxSgePerRequest;
    this.memory = OffHeapBuffer.allocate((long) capacity * (WR_SIZE + (long) maxSge * SGE_SIZE));
    this.base = memory.address();
    this.sgeBase = base + (long) capacity * WR_SIZE;
  }

  public int capacity() { return capacity; }

  public int maxSgePerRequest() { return maxSge; }

  public int size() { return size; }

  public void clear() { size = 0; }

  public RecvRequests add(long wrId) {
    if (size == capacity) {
      throw new IllegalStateException("RecvRequests is full: capacity " + capacity);
    }
    long wr = base + (long) size * WR_SIZE;
    NativeMemory.zero(wr, WR_SIZE);
    NativeMemory.putLong(wr + OFF_WR_ID, wrId);
    NativeMemory.putLong(wr + OFF_SG_LIST, sgeBase + (long) size * maxSge * SGE_SIZE);
    size++;
    return this;
  }

  public RecvRequests sge(long address, int length, int lkey) {
    if (size == 0) throw new IllegalStateException("call add(wrId) before sge(...)");
    long wr = base + (long) (size - 1) * WR_SIZE;
    int n = NativeMemory.getInt(wr + OFF_NUM_SGE);
    if (n == maxSge) {
      throw new IllegalStateException("request " + (size - 1) + " already has " + maxSge
          + " SGEs, the most this RecvRequests holds per request");
    }
    long sge = NativeMemory.getLong(wr + OFF_SG_LIST) + (long) n * SGE_SIZE;
    NativeMemory.putLong(sge, address);
    NativeMemory.putInt(sge + 8, length);
    NativeMemory.putInt(sge + 12, lkey);
    NativeMemory.putInt(wr + OFF_NUM_SGE, n + 1);
    return this;
  }

  public RecvRequests sge(MemoryRegion mr, long offset, int length) {
    return sge(mr.address() + offset, length, mr.lkey());
  }

  public long linkForPost() {
    for (int i = 0; i < size; i++) {
      long wr = base + (long) i * WR_SIZE;
      NativeMemory.putLong(wr + OFF_NEXT, i + 1 < size ? wr + WR_SIZE : 0L);
    }
    return base;
  }

  public long requestAddress(int i) {
    if (i < 0 || i >= size) throw new IndexOutOfBoundsException("request " + i + " of " + size);
    return base + (long) i * WR_SIZE;
  }

  public long wrId(int i) { return NativeMemory.getLong(requestAddress(i) + OFF_WR_ID); }
  public int numSge(int i) { return NativeMemory.getInt(requestAddress(i) + OFF_NUM_SGE); }

  @Override
  public void close() {
    memory.close();
  }
}
