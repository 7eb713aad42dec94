package dev.pekkordma.benchmarks;

import dev.pekkordma.samples.perf.BwResult;
import java.net.InetSocketAddress;

/**
 * The server's half of a stream benchmark, as its client sees it: in a JVM of its own (a
 * deployment's shape: {@link ServerProcess}) or in the client's ({@link BenchServer}).
 */
interface ServerEnd extends AutoCloseable {
  /**
   * Readies the server for one run of {@code count} chunks (or pings) of {@code size} bytes;
   * where the client connects for it.
   */
  InetSocketAddress prepare(int size, long count) throws Exception;

  /** The run's figures, timed at the server from the first bytes' arrival to the last's. */
  BwResult await(int size, long count) throws Exception;

  /** The CPU time the server's process has used so far, in nanoseconds. */
  long cpuNanos() throws Exception;

  /** Whether the server runs in this JVM (its CPU is this process's). */
  boolean inThisJvm();

  @Override
  void close() throws Exception;

  /** This process's CPU time so far, in nanoseconds. */
  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }
}
