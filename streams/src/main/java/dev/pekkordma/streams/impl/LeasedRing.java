package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.streams.ReceivedBuffer;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A connection's receive ring lent to the application in place (the buffer source): each
 * delivered write is the preallocated lease of its slot, with a preallocated read-only view.
 *
 * <p>The writer fills slots in order and credits are a count, so a slot's credit may go back
 * only when every older slot has come back too: {@link #reclaim} advances over the released
 * prefix. Releases come from any thread; one that finds no wake under way starts one (so at most
 * one async callback is in flight, not one per release), and the stage also reclaims whenever it
 * runs anyway, which picks up a consumer's releases in its own thread without waiting.
 *
 * <p>The ring's memory is counted: one reference for the stage, one per lease out; the stage's
 * {@link #close} and the last release, whichever comes last, free it, so a teardown never pulls
 * memory from under a buffer the application still holds. The registration is the stage's: it
 * goes at teardown, after the QP (nothing writes into the ring after that), so a teardown frees
 * every RDMA resource at once. A lease that is never released (an element a failed stream
 * dropped in a buffer of its own) leaves the memory to the garbage collector, which frees a
 * direct buffer once neither it nor a view of it is reachable.
 */
final class LeasedRing {
  private static final int FREE = 0;
  private static final int LENT = 1;
  private static final VarHandle STATE;

  static {
    try {
      STATE = MethodHandles.lookup().findVarHandle(Lease.class, "state", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final OffHeapBuffer memory;
  private final String peer;
  private final Lease[] leases;
  private final AtomicInteger references = new AtomicInteger(1);
  private final AtomicBoolean wakePending = new AtomicBoolean();
  private final Runnable freed;
  private volatile Runnable wake; // null once the stage is gone
  private volatile boolean memoryFreed;

  // the stage's thread only
  private long delivered; // writes lent or skipped: the next is in slot delivered % slots
  private long reclaimed; // writes whose slot may be credited again

  /**
   * Takes over {@code memory}, {@code slots} slots of {@code slotSize} bytes written by
   * {@code peer} (for messages); {@code wake} runs, in the releasing thread, when a release may
   * let {@link #reclaim} advance; {@code freed} runs once the memory is freed.
   */
  LeasedRing(OffHeapBuffer memory, int slots, int slotSize, String peer, Runnable wake,
      Runnable freed) {
    this.memory = memory;
    this.freed = freed;
    this.peer = peer;
    this.wake = wake;
    leases = new Lease[slots];
    for (int i = 0; i < slots; i++) {
      leases[i] = new Lease(i, memory.view(i * slotSize, slotSize).asReadOnlyBuffer());
    }
  }

  /**
   * The next write's slot has come back since its last use: false only if the peer wrote more
   * than the credits it was given (it overwrote a slot the application may still read).
   */
  boolean nextSlotReclaimed() {
    return delivered < reclaimed + leases.length;
  }

  /** The ring slot the next write is in (for messages). */
  int nextSlot() {
    return (int) (delivered % leases.length);
  }

  /** Lends the next slot, holding {@code length} bytes of one write. */
  ReceivedBuffer lend(int length, boolean endsElement) {
    Lease l = leases[(int) (delivered % leases.length)];
    l.write = delivered++;
    l.length = length;
    l.endsElement = endsElement;
    l.view.clear().limit(length);
    references.incrementAndGet();
    STATE.setRelease(l, LENT);
    return l;
  }

  /** The next slot's write is not wanted (downstream cancelled): it comes back in its turn. */
  void skip() {
    delivered++;
  }

  /** The stage's wake ran: as {@link #reclaim}, and a release after this wakes it again. */
  int woken() {
    wakePending.set(false);
    return reclaim();
  }

  /** Slots to credit now: those released (or skipped) in ring order since the last call. */
  int reclaim() {
    long from = reclaimed;
    while (reclaimed < delivered
        && (int) STATE.getAcquire(leases[(int) (reclaimed % leases.length)]) == FREE) {
      reclaimed++;
    }
    return (int) (reclaimed - from);
  }

  /** Everything delivered has been released (and reclaimed). */
  boolean allReturned() {
    return reclaimed == delivered;
  }

  /** The stage is done with the ring (and has deregistered it): freed now, or by the last release. */
  void close() {
    wake = null;
    unreference();
  }

  private void released() {
    Runnable w = wake;
    if (w != null && wakePending.compareAndSet(false, true)) w.run();
    unreference();
  }

  private void unreference() {
    if (references.decrementAndGet() != 0) return;
    memoryFreed = true;
    memory.close();
    freed.run();
  }

  /** The memory has been freed (for tests). */
  boolean freed() {
    return memoryFreed;
  }

  /** A slot's lease, reused for every write into it. */
  private final class Lease implements ReceivedBuffer {
    private final int slot;
    private final ByteBuffer view;
    @SuppressWarnings("unused") // through STATE
    private volatile int state = FREE;
    private long write;
    private int length;
    private boolean endsElement;

    Lease(int slot, ByteBuffer view) {
      this.slot = slot;
      this.view = view;
    }

    @Override
    public ByteBuffer buffer() {
      if ((int) STATE.getAcquire(this) != LENT) {
        throw new IllegalStateException(this + " was used after release(): its ring slot may"
            + " hold a later write already");
      }
      return view;
    }

    @Override
    public int length() {
      return length;
    }

    @Override
    public boolean endsElement() {
      return endsElement;
    }

    @Override
    public void release() {
      if (!STATE.compareAndSet(this, LENT, FREE)) {
        throw new IllegalStateException(this + " was released already: release each element"
            + " once");
      }
      released();
    }

    @Override
    public String toString() {
      return "ReceivedBuffer (write #" + write + " from " + peer + ", ring slot " + slot + ", "
          + length + " bytes)";
    }
  }
}
