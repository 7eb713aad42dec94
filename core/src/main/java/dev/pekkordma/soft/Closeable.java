package dev.pekkordma.soft;

import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.Described;
import java.util.concurrent.atomic.AtomicBoolean;

/** The closed flag every software resource has: a verb on a closed one fails naming it. */
abstract class Closeable implements Described {
  private final AtomicBoolean closed = new AtomicBoolean();

  @Override
  public abstract String describe();

  final boolean isClosed() {
    return closed.get();
  }

  final void checkOpen(String verb) {
    if (closed.get()) {
      throw new RdmaException(verb, RdmaException.EINVAL, describe() + " is already closed");
    }
  }

  /** True for the one caller that closes it. */
  final boolean markClosed() {
    return closed.compareAndSet(false, true);
  }

  /** Undo a close that was refused (EBUSY). */
  final void reopen() {
    closed.set(false);
  }
}
