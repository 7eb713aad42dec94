package dev.pekkordma.actors;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;

/**
 * Registered buffers of one size, carved from large slabs registered once when the pool is made,
 * so leasing and returning never register memory. Owned by its PD actor, which closes it when it
 * stops; leasing and releasing are thread-safe.
 */
public final class BufferPool {
  /** Local write plus remote read and write: buffers serve sends, receives and one-sided ops. */
  public static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

  private final String name;
  private final int bufferSize;
  private final List<OffHeapBuffer> slabs = new ArrayList<>();
  private final List<MemoryRegion> regions = new ArrayList<>();
  private final Buffer[] buffers;
  private final int[] free; // stack of free buffer indexes, guarded by this
  private int freeCount;
  private boolean closed;
  private final MemoryBudget.Reservation reservation;

  /** Registers the slabs, whose bytes {@code reservation} holds; it goes back at {@link #close}. */
  BufferPool(String name, ProtectionDomain pd, int bufferSize, int slabSize, int slabCount,
      MemoryBudget.Reservation reservation) {
    this.name = name;
    this.reservation = reservation;
    this.bufferSize = bufferSize;
    int perSlab = slabSize / bufferSize;
    buffers = new Buffer[perSlab * slabCount];
    free = new int[buffers.length];
    try {
      for (int s = 0; s < slabCount; s++) {
        OffHeapBuffer slab = OffHeapBuffer.allocate(slabSize);
        slabs.add(slab);
        MemoryRegion mr = pd.registerMemory(slab, ACCESS);
        regions.add(mr);
        for (int i = 0; i < perSlab; i++) {
          int index = s * perSlab + i;
          buffers[index] = new Buffer(this, index, slab, i * bufferSize, bufferSize, mr.lkey(),
              mr.rkey());
        }
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
    for (int i = buffers.length - 1; i >= 0; i--) free[freeCount++] = i;
  }

  public int bufferSize() { return bufferSize; }

  /** How many buffers the pool holds. */
  public int capacity() { return buffers.length; }

  /** How many buffers are free now. */
  public synchronized int available() { return freeCount; }

  /** How many buffers are leased now (a closed pool has none to give back). */
  synchronized int leased() { return closed ? 0 : buffers.length - freeCount; }

  /** A free buffer, or null when all are leased (or the pool is closed). */
  public synchronized Buffer tryLease() {
    if (closed || freeCount == 0) return null;
    Buffer b = buffers[free[--freeCount]];
    b.leased = true;
    return b;
  }

  /** A free buffer; fails when all are leased. */
  public Buffer lease() {
    Buffer b = tryLease();
    if (b == null) {
      throw new IllegalStateException(this + " has no free buffer (all " + capacity()
          + " leased)" + (isClosed() ? " and is closed" : ""));
    }
    return b;
  }

  synchronized void release(Buffer b) {
    if (b.pool() != this) throw new IllegalArgumentException(b + " is not from " + this);
    if (closed) return; // its memory is gone; nothing to give back
    if (!b.leased) throw new IllegalStateException(b + " is not leased (released twice?)");
    b.leased = false;
    free[freeCount++] = b.index;
  }

  public synchronized boolean isClosed() { return closed; }

  synchronized boolean isLeased(Buffer b) { return b.leased; }

  /** Deregisters and frees the slabs; leased buffers become unusable. */
  void close() {
    synchronized (this) {
      if (closed) return;
      closed = true;
    }
    RuntimeException failure = null;
    for (MemoryRegion mr : regions) {
      try {
        mr.close();
      } catch (RuntimeException e) {
        if (failure == null) failure = e; else failure.addSuppressed(e);
      }
    }
    for (OffHeapBuffer slab : slabs) slab.close();
    reservation.close();
    if (failure != null) throw failure;
  }

  @Override
  public String toString() {
    return "BufferPool(" + name + ", " + buffers.length + " x " + bufferSize + " B)";
  }
}
