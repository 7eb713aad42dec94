package dev.pekkordma.streams.impl;

import dev.pekkordma.runtime.RegisteredMemoryExhaustedException;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The registered memory our writes are copied from. An elastic connection keeps a small area
 * (a few small buffers) and takes a large one while it sends more than they hold, if the memory
 * budget has room; a large area unused for a while goes back, once its last write is done. A
 * buffer's id says its area: ids of the large one have {@link #LARGE} set. Used on the stage's
 * thread.
 */
final class SendBuffers {
  static final int LARGE = 1 << 20;

  /** {@code count} buffers of {@code size} in one registration. */
  static final class Area {
    final Registered area;
    final int count;
    final int size;
    final ByteBuffer[] views;
    final int[] free;
    int freeCount;

    Area(Registered area, int count, int size) {
      this.area = area;
      this.count = count;
      this.size = size;
      views = new ByteBuffer[count];
      free = new int[count];
      for (int i = 0; i < count; i++) {
        views[i] = area.memory().view(i * size, size);
        free[freeCount++] = count - 1 - i;
      }
    }
  }

  private final Area small;
  private final Supplier<Area> openLarge; // null: never elastic; may throw for want of budget
  private final Consumer<Area> closeLarge;
  private Area large;
  private boolean largeActive;
  private boolean wantLarge;
  private boolean usedLarge; // since the last tick
  private long growAfter;
  private final long backoffNanos;
  private final long earnLarge; // bytes written from the small area before the large is taken
  private long carried;

  /** A fixed area: {@code area} is all there is. */
  SendBuffers(Area area) {
    this(area, null, null, 0, 0);
  }

  /**
   * Elastic: {@code small} always, a large area from {@code openLarge} when busy, once the small
   * one has written {@code earnLarge} bytes (what the large one holds: registering it then costs
   * at most what the traffic did, and a short exchange never takes it).
   */
  SendBuffers(Area small, Supplier<Area> openLarge, Consumer<Area> closeLarge, long backoffNanos,
      long earnLarge) {
    this.small = small;
    this.openLarge = openLarge;
    this.closeLarge = closeLarge;
    this.backoffNanos = backoffNanos;
    this.earnLarge = earnLarge;
  }

  private Area area(int id) {
    return (id & LARGE) != 0 ? large : small;
  }

  private Area active() {
    return largeActive ? large : small;
  }

  /** Whether the large area waits for its last writes to complete before it goes. */
  boolean retiring() {
    return large != null && !largeActive;
  }

  /** Whether the large area is open (in use, or waiting for its last writes). */
  boolean large() {
    return large != null;
  }

  /** The size of the buffers writes take now: the most one write carries from us. */
  int size() {
    return active().size;
  }

  /** A free buffer's id, or -1 when all are in flight (which asks for the large area). */
  int take() {
    Area a = active();
    if (a.freeCount == 0) {
      if (!largeActive) wantLarge = openLarge != null;
      return -1;
    }
    if (largeActive) usedLarge = true;
    int i = a.free[--a.freeCount];
    return largeActive ? i | LARGE : i;
  }

  /** Whether the area writes take from has no buffer free. */
  boolean noneFree() {
    return active().freeCount == 0;
  }

  /** A buffer taken and not posted, or whose write completed. */
  void giveBack(int id) {
    Area a = area(id);
    a.free[a.freeCount++] = id & (LARGE - 1);
    if (a == large && !largeActive && a.freeCount == a.count) retireLarge();
  }

  long address(int id) {
    Area a = area(id);
    return a.area.mr().address() + (long) (id & (LARGE - 1)) * a.size;
  }

  int lkey(int id) {
    return area(id).area.mr().lkey();
  }

  ByteBuffer view(int id) {
    return area(id).views[id & (LARGE - 1)];
  }

  /** A data write of {@code length} bytes was posted. */
  void wrote(int length) {
    if (!largeActive) carried += length;
  }

  /** An element of {@code length} bytes is to go: longer than our small buffers asks for more. */
  void toSend(int length) {
    if (openLarge != null && !largeActive && length > small.size) wantLarge = true;
  }

  /**
   * Takes the large area when asked for and the budget allows, gives it back when a tick
   * ({@code tick}) finds it unused since the last.
   */
  void resize(boolean tick) {
    if (openLarge == null) return;
    if (tick) {
      if (largeActive && !usedLarge) {
        largeActive = false;
        carried = 0;
        if (large.freeCount == large.count) retireLarge();
      }
      usedLarge = false;
    }
    if (!largeActive && wantLarge && large == null && carried >= earnLarge
        && System.nanoTime() - growAfter >= 0) {
      wantLarge = false;
      try {
        large = openLarge.get();
        largeActive = true;
        usedLarge = true;
      } catch (RegisteredMemoryExhaustedException e) { // the small area serves, slower
        growAfter = System.nanoTime() + backoffNanos;
      }
    }
  }

  private void retireLarge() {
    Area a = large;
    large = null;
    closeLarge.accept(a);
  }

  /** Every area still open (for the connection's teardown). */
  Area[] areas() {
    return large == null ? new Area[] {small} : new Area[] {small, large};
  }
}
