package dev.pekkordma.samples;

import java.lang.management.ManagementFactory;

/**
 * Bytes the current thread has allocated on the heap, where the JVM counts them (HotSpot does),
 * so that the data path's claim to allocate nothing per request can be checked; -1 elsewhere.
 */
final class Allocations {
  private static final com.sun.management.ThreadMXBean BEAN = bean();

  private Allocations() {}

  private static com.sun.management.ThreadMXBean bean() {
    try {
      Object b = ManagementFactory.getThreadMXBean();
      if (b instanceof com.sun.management.ThreadMXBean) {
        com.sun.management.ThreadMXBean t = (com.sun.management.ThreadMXBean) b;
        if (t.isThreadAllocatedMemorySupported()) {
          t.setThreadAllocatedMemoryEnabled(true);
          return t;
        }
      }
    } catch (RuntimeException | LinkageError e) {
      // not HotSpot: no count
    }
    return null;
  }

  static long currentThread() {
    return BEAN == null ? -1 : BEAN.getThreadAllocatedBytes(Thread.currentThread().getId());
  }
}
