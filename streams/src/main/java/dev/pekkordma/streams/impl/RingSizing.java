package dev.pekkordma.streams.impl;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * When a message connection's receive ring is small and when it is large. A connection starts
 * with the small ring ({@code idle-receive-buffers} slots of {@code idle-buffer-size}), so that
 * an idle connection holds little registered memory; writes that fill its slots, or fill all of
 * them, make it ask for the large one ({@code receive-buffers} of {@code buffer-size}) if the
 * memory budget has room and the small ring has taken as many bytes as the large one holds
 * (so a connection's registering costs at most what its traffic did: a short exchange never
 * grows); a large ring that took nothing for {@code shrink-after} goes back to the small one.
 * One per connection, used on the stage's thread.
 */
final class RingSizing {
  /** {@code pekko-rdma.streams.elastic-ring}. */
  record SizingSettings(boolean enabled, int idleCount, int idleSize, Duration shrinkAfter) {
    static final String PATH = "pekko-rdma.streams.elastic-ring";

    static SizingSettings from(Config c) {
      String p = PATH + ".";
      boolean on = c.getBoolean(p + "enabled");
      int count = c.getInt(p + "idle-receive-buffers");
      long size = c.getBytes(p + "idle-buffer-size");
      Duration shrink = c.getDuration(p + "shrink-after");
      if (count < 1 || count > 1 << 16) {
        throw new IllegalArgumentException(p + "idle-receive-buffers must be in [1, 65536], was "
            + count);
      }
      if (size < Wire.MIN_PIECE || size > 1 << 30) {
        throw new IllegalArgumentException(p + "idle-buffer-size must be in [" + Wire.MIN_PIECE
            + " B, 1 GiB], was " + size);
      }
      if (shrink.isNegative() || shrink.isZero()) {
        throw new IllegalArgumentException(p + "shrink-after must be positive, was " + shrink);
      }
      return new SizingSettings(on, count, (int) size, shrink);
    }
  }

  /** A ring to announce: {@code count} slots of {@code size} bytes. */
  record Plan(int count, int size, boolean large) {}

  private final Plan small;
  private final Plan large;
  private final long shrinkNanos;
  private long carried; // bytes the small ring took since it was last announced
  private boolean atLarge; // the ring in use, or announced, is the large one
  private boolean pressure;
  private long takenAtLastTick = -1;
  private long growAfter; // System.nanoTime(): a refused growth waits until then

  private RingSizing(Plan small, Plan large, Duration shrinkAfter) {
    this.small = small;
    this.large = large;
    this.shrinkNanos = shrinkAfter.toNanos();
  }

  /**
   * The sizing of a connection whose large ring is {@code count} slots of {@code size}, or null
   * when its ring does not change (off, or the small ring would be no smaller).
   */
  static RingSizing of(SizingSettings s, int count, int size) {
    int idleCount = Math.min(s.idleCount(), count);
    int idleSize = Math.min(s.idleSize(), size);
    if (!s.enabled() || (long) idleCount * idleSize >= (long) count * size) return null;
    return new RingSizing(new Plan(idleCount, idleSize, false), new Plan(count, size, true),
        s.shrinkAfter());
  }

  /** The ring a connection starts with. */
  Plan initial() {
    return small;
  }

  Duration shrinkAfter() {
    return Duration.ofNanos(shrinkNanos);
  }

  /** A write came into a ring of {@code slots} x {@code slotSize}, {@code inFlight} queued. */
  void arrived(int length, boolean more, int slots, int slotSize, int inFlight) {
    if (atLarge) return;
    carried += length;
    boolean full = more || length == slotSize || inFlight >= slots;
    if (full && carried >= (long) large.count() * large.size()) pressure = true;
  }

  /**
   * The ring to announce now, if any: the large one under pressure, the small one when a tick
   * ({@code tick}) finds nothing taken since the last ({@code taken} counts every write taken).
   */
  Plan due(boolean tick, long taken) {
    if (tick) {
      boolean idle = taken == takenAtLastTick;
      takenAtLastTick = taken;
      if (atLarge && idle) return small;
    }
    if (!atLarge && pressure && System.nanoTime() - growAfter >= 0) return large;
    return null;
  }

  /** Whether the ring in use, or announced, is the large one. */
  boolean atLarge() {
    return atLarge;
  }

  /** {@code p} was announced. */
  void announced(Plan p) {
    atLarge = p.large();
    pressure = false;
    carried = 0;
  }

  /** The budget refused {@code p}: the connection stays as it is, and asks again later. */
  void refused(Plan p) {
    pressure = false;
    growAfter = System.nanoTime() + shrinkNanos;
  }
}
