package dev.pekkordma.samples;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * What one side of a transfer opened, closed in the reverse order on the way out, so that each
 * thing goes before what it depends on (QP before CQ, MR before PD and buffer, PD before the CM
 * id). A failure to close one is kept and the rest are still closed.
 */
final class Resources implements AutoCloseable {
  private final Deque<AutoCloseable> stack = new ArrayDeque<>();

  /** Registers {@code r} to be closed before everything registered earlier; returns it. */
  <T extends AutoCloseable> T add(T r) {
    stack.push(r);
    return r;
  }

  /** Registers an action (such as destroying a QP through its CM id). */
  void onClose(AutoCloseable action) {
    stack.push(action);
  }

  @Override
  public void close() {
    RuntimeException first = null;
    while (!stack.isEmpty()) {
      try {
        stack.pop().close();
      } catch (Exception e) {
        if (first == null) {
          first = e instanceof RuntimeException ? (RuntimeException) e : new RuntimeException(e);
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) throw first;
  }
}
