package dev.pekkordma.soft;

import dev.pekkordma.verbs.abi.RequestLayout;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.RecvRequests;

/**
 * Posted receives, in order, copied out of the user's RecvRequests into preallocated off-heap
 * slots (wr_id, SGE count, SGEs). Callers synchronize.
 */
final class ReceiveRing implements AutoCloseable {
  private static final int HEADER = 16; // wr_id, num_sge
  private final OffHeapBuffer memory;
  private final long base;
  private final int capacity;
  private final int maxSge;
  private final int slotSize;
  private long head;
  private long tail;

  ReceiveRing(int capacity, int maxSge) {
    this.capacity = capacity;
    this.maxSge = maxSge;
    this.slotSize = HEADER + maxSge * RequestLayout.SGE_SIZE;
    this.memory = OffHeapBuffer.allocate((long) capacity * slotSize);
    this.base = memory.address();
  }

  int capacity() { return capacity; }
  int maxSge() { return maxSge; }
  int size() { return (int) (tail - head); }
  boolean isEmpty() { return tail == head; }
  boolean isFull() { return tail - head == capacity; }

  /** Copies request {@code i} of {@code requests} in; the caller checked space and SGE count. */
  void push(RecvRequests requests, int i) {
    long from = requests.requestAddress(i);
    int n = NativeMemory.getInt(from + RequestLayout.OFF_NUM_SGE);
    long slot = slot(tail);
    NativeMemory.putLong(slot, NativeMemory.getLong(from + RequestLayout.OFF_WR_ID));
    NativeMemory.putInt(slot + 8, n);
    NativeMemory.copy(NativeMemory.getLong(from + RequestLayout.OFF_SG_LIST), slot + HEADER,
        (long) n * RequestLayout.SGE_SIZE);
    tail++;
  }

  long headWrId() { return NativeMemory.getLong(slot(head)); }
  int headNumSge() { return NativeMemory.getInt(slot(head) + 8); }
  /** The address of the head's SGE array (struct ibv_sge layout). */
  long headSges() { return slot(head) + HEADER; }

  void pop() { head++; }

  void clear() { head = tail; }

  private long slot(long index) {
    return base + (index % capacity) * slotSize;
  }

  @Override
  public void close() {
    memory.close();
  }
}
