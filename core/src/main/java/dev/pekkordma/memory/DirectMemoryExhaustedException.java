package dev.pekkordma.memory;

/**
 * The JVM had no direct memory left for an {@link OffHeapBuffer}: the allocation failed and
 * nothing else did. The JVM throws an {@link OutOfMemoryError} for it, which Pekko takes as fatal
 * and answers by exiting the JVM; this is what the library throws instead.
 */
public final class DirectMemoryExhaustedException extends RuntimeException {
  public DirectMemoryExhaustedException(String message, Throwable cause) {
    super(message, cause);
  }
}
