package dev.pekkordma.verbs;

import static dev.pekkordma.verbs.abi.RequestLayout.*;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;

/**
 * What send and receive batches share: one off-heap block of fixed-size work request structs
 * followed by their {@code struct ibv_sge} arrays, filled in order and reused after {@link
 * #clear}. The struct layouts differ only in size; {@code wr_id}, {@code next}, {@code sg_list}
 * and {@code num_sge} sit at the same offsets in both.
 */
public abstract class RequestBatch implements AutoCloseable {
  private final OffHeapBuffer memory;
  private final String kind;
  private final int wrSize;
  final long base;
  private final long sgeBase;
  private final int capacity;
  private final int maxSge;
  int size;

  RequestBatch(String kind, int wrSize, int capacity, int maxSgePerRequest) {
    if (capacity <= 0) throw new IllegalArgumentException("capacity must be positive: " + capacity);
    if (maxSgePerRequest <= 0) {
      throw new IllegalArgumentException("maxSgePerRequest must be positive: " + maxSgePerRequest);
    }
    this.kind = kind;
    this.wrSize = wrSize;
    this.capacity = capacity;
    this.maxSge = maxSgePerRequest;
    this.memory = OffHeapBuffer.allocate((long) capacity * (wrSize + (long) maxSge * SGE_SIZE));
    this.base = memory.address();
    this.sgeBase = base + (long) capacity * wrSize;
  }

  public int capacity() { return capacity; }

  public int maxSgePerRequest() { return maxSge; }

  public int size() { return size; }

  public void clear() { size = 0; }

  /** Starts request {@code size}: zeroed, with its wr_id and its own SGE array; returns it. */
  final long startRequest(long wrId) {
    if (size == capacity) throw new IllegalStateException(kind + " is full: capacity " + capacity);
    long wr = base + (long) size * wrSize;
    NativeMemory.zero(wr, wrSize);
    NativeMemory.putLong(wr + OFF_WR_ID, wrId);
    NativeMemory.putLong(wr + OFF_SG_LIST, sgeBase + (long) size * maxSge * SGE_SIZE);
    size++;
    return wr;
  }

  /** The request added last. */
  final long current() {
    if (size == 0) throw new IllegalStateException("call add(...) before setting a request's fields");
    return base + (long) (size - 1) * wrSize;
  }

  /** Appends a scatter/gather element to the request added last. */
  final void appendSge(long address, int length, int lkey) {
    long wr = current();
    int n = NativeMemory.getInt(wr + OFF_NUM_SGE);
    if (n == maxSge) {
      throw new IllegalStateException("request " + (size - 1) + " already has " + maxSge
          + " SGEs, the most this " + kind + " holds per request");
    }
    long sge = NativeMemory.getLong(wr + OFF_SG_LIST) + (long) n * SGE_SIZE;
    NativeMemory.putLong(sge, address);
    NativeMemory.putInt(sge + 8, length);
    NativeMemory.putInt(sge + 12, lkey);
    NativeMemory.putInt(wr + OFF_NUM_SGE, n + 1);
  }

  /** Links the requests into the {@code next} chain and returns the first's address. */
  public long linkForPost() {
    for (int i = 0; i < size; i++) {
      long wr = base + (long) i * wrSize;
      NativeMemory.putLong(wr + OFF_NEXT, i + 1 < size ? wr + wrSize : 0L);
    }
    return base;
  }

  /** The address of request {@code i}'s struct. */
  public long requestAddress(int i) {
    if (i < 0 || i >= size) throw new IndexOutOfBoundsException("request " + i + " of " + size);
    return base + (long) i * wrSize;
  }

  public long wrId(int i) { return NativeMemory.getLong(requestAddress(i) + OFF_WR_ID); }

  public int numSge(int i) { return NativeMemory.getInt(requestAddress(i) + OFF_NUM_SGE); }

  @Override
  public void close() {
    memory.close();
  }
}
