package dev.pekkordma.runtime;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The memory the library may register in one actor system ({@value #SETTING}): every
 * connection's rings and buffers, every actor pool and registration reserve their bytes here
 * before they allocate them, and give them back once freed. Past the limit a reservation is
 * refused with {@link RegisteredMemoryExhaustedException}, naming the setting and the numbers,
 * which fails only what asked; the JVM's own limit on direct memory is never reached, so no
 * {@link OutOfMemoryError} (fatal to Pekko) comes of it.
 */
public final class MemoryBudget {
  public static final String SETTING = RuntimeSettings.ROOT + ".max-registered-memory";

  private final long limit;
  private final AtomicLong used = new AtomicLong();
  private final AtomicInteger reservations = new AtomicInteger();

  public MemoryBudget(long limit) {
    if (limit <= 0) throw new IllegalArgumentException(SETTING + " must be positive, was " + limit);
    this.limit = limit;
  }

  /** The budget {@code auto} means: three quarters of the JVM's limit on direct memory. */
  public static long automatic() {
    return directMemoryLimit() / 4 * 3;
  }

  /** -XX:MaxDirectMemorySize, or the heap's maximum that the JVM takes when it is not set. */
  public static long directMemoryLimit() {
    try {
      HotSpotDiagnosticMXBean hotspot =
          ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
      long set = Long.parseLong(hotspot.getVMOption("MaxDirectMemorySize").getValue());
      if (set > 0) return set;
    } catch (RuntimeException e) {
      // not HotSpot: the JVM's default below
    }
    return Runtime.getRuntime().maxMemory();
  }

  public long limit() {
    return limit;
  }

  /** Bytes reserved now. */
  public long used() {
    return used.get();
  }

  /**
   * Reserves {@code bytes} for {@code purpose} ("a stream connection to 10.0.0.2:7000's receive
   * ring and send buffers"), or fails naming the setting, the numbers, and {@code lower}: the
   * settings that make such a reservation smaller.
   */
  public Reservation reserve(long bytes, String purpose, String lower) {
    if (bytes < 0) throw new IllegalArgumentException("cannot reserve " + bytes + " bytes");
    long now;
    do {
      now = used.get();
      if (now + bytes > limit) {
        throw new RegisteredMemoryExhaustedException("cannot register " + bytes + " bytes for "
            + purpose + ": " + now + " of the " + limit + " bytes " + SETTING + " allows are in"
            + " use (" + reservations.get() + " reservations); raise it (with"
            + " -XX:MaxDirectMemorySize, of which it may take three quarters), or lower " + lower);
      }
    } while (!used.compareAndSet(now, now + bytes));
    reservations.incrementAndGet();
    return new Reservation(bytes);
  }

  /** Bytes held for one purpose until {@link #close}d (once; later calls do nothing). */
  public final class Reservation implements AutoCloseable {
    private final long bytes;
    private final AtomicBoolean released = new AtomicBoolean();

    private Reservation(long bytes) {
      this.bytes = bytes;
    }

    public long bytes() {
      return bytes;
    }

    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        used.addAndGet(-bytes);
        reservations.decrementAndGet();
      }
    }
  }
}
