package dev.pekkordma.nativeverbs;

import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

/**
 * Keeps the process's memory mappings under the kernel's {@code vm.max_map_count}, with room left
 * for the JVM. Each CQ, QP and SRQ maps its queues into the process (rxe: one mapping a queue), so
 * tens of thousands of connections reach the limit with memory to spare; past it the JVM itself
 * cannot map a thread stack or a heap region and dies. A creation that would eat into the
 * reserve is refused with ENOMEM naming the numbers and the setting instead.
 *
 * <p>Counting the mappings means reading {@code /proc/self/maps}, so it is counted only when an
 * estimate (the last count plus {@link #MAPS_PER_CREATION} per creation since) reaches the
 * threshold; destroyed objects are seen at the next count.
 */
final class MapHeadroom {
  /** The setting (under {@code pekko-rdma}) for the mappings kept free for the JVM. */
  static final String RESERVE_SETTING = "pekko-rdma.native.map-reserve";
  static final long DEFAULT_RESERVE = 8192;
  /** At most this many mappings a creation adds (an rxe QP adds four: its queues and more). */
  static final int MAPS_PER_CREATION = 4;
  private static final Path LIMIT_FILE = Path.of("/proc/sys/vm/max_map_count");
  private static final Path MAPS_FILE = Path.of("/proc/self/maps");

  private final long limit; // 0: unknown, nothing guarded
  private final long reserve;
  private final LongSupplier mappings;
  private long counted;
  private long createdSince;

  MapHeadroom(long limit, long reserve, LongSupplier mappings) {
    if (reserve < 0) {
      throw new IllegalArgumentException(RESERVE_SETTING + " must be at least 0, not " + reserve);
    }
    this.reserve = reserve;
    this.mappings = mappings;
    this.counted = limit > 0 ? mappings.getAsLong() : 0;
    this.limit = plausible(limit, counted);
  }

  /** This process's limit (0 where the kernel does not say) and mappings. */
  static MapHeadroom ofProcess(long reserve) {
    return new MapHeadroom(readLimit(), reserve, MapHeadroom::countMappings);
  }

  /**
   * The limit, or 0 where the process already has more mappings than it says (a sandbox such
   * as gVisor reports a figure it does not enforce).
   */
  static long plausible(long limit, long mappingsNow) {
    return limit > mappingsNow ? limit : 0;
  }

  long limit() {
    return limit;
  }

  long reserve() {
    return reserve;
  }

  /**
   * Before a creation that maps memory: refuses it with ENOMEM when the process's mappings leave
   * less than the reserve.
   */
  synchronized void beforeCreating(String verb, String what) {
    if (limit <= 0) return;
    long threshold = limit - reserve;
    if (counted + (createdSince + 1) * MAPS_PER_CREATION > threshold) {
      counted = mappings.getAsLong();
      createdSince = 0;
      if (counted + MAPS_PER_CREATION > threshold) {
        throw new RdmaException(verb, RdmaException.ENOMEM, what + " refused: this process has "
            + counted + " memory mappings of vm.max_map_count = " + limit + ", and " + reserve
            + " are kept for the JVM (" + RESERVE_SETTING + "); each CQ and QP maps its queues."
            + " Close connections, or raise the kernel's limit (sysctl -w vm.max_map_count="
            + Math.max(262144, 4 * limit) + ")");
      }
    }
    createdSince++;
  }

  static long readLimit() {
    try {
      // by lines: on some kernels Files.readString of a proc file of size 0 loses bytes
      return Long.parseLong(Files.readAllLines(LIMIT_FILE).get(0).trim());
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  static long countMappings() {
    try (Stream<String> lines = Files.lines(MAPS_FILE)) {
      return lines.count();
    } catch (IOException | UncheckedIOException | SecurityException e) {
      return 0; // not counted: nothing refused
    }
  }
}
