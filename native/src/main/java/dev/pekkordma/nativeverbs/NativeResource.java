package dev.pekkordma.nativeverbs;

import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.Described;
import dev.pekkordma.verbs.spi.OpenChildren;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One native object (a C pointer) with the objects opened on it: closing checks that nothing is
 * still open on it (EBUSY naming what is), and closing the provider force-closes the whole tree
 * children first.
 */
abstract class NativeResource implements Described {
  final long handle;
  final NativeResource parent;
  private final AtomicBoolean closed = new AtomicBoolean();
  final OpenChildren children = new OpenChildren();

  NativeResource(long handle, NativeResource parent) {
    this.handle = handle;
    this.parent = parent;
    if (parent != null) parent.children.add(this);
  }

  /** Order in which siblings are force-closed: lower first. */
  abstract int rank();

  /** Short name for messages: "QP 17", "MR lkey 0x...". */
  @Override
  public abstract String describe();

  /** The verb that destroys it, for messages. */
  abstract String destroyVerb();

  /** Throws EBUSY naming what still uses it (beyond children); nothing by default. */
  void checkNotInUse() {}

  /** Destroys the native object. */
  abstract void destroy();

  /** What to do after destroying (counters, maps). */
  abstract void forget();

  /** Prepares a forced close (e.g. acknowledge pending events); nothing by default. */
  void beforeForcedClose() {}

  boolean isClosed() {
    return closed.get();
  }

  void checkOpen(String verb) {
    if (closed.get()) {
      throw new RdmaException(verb, RdmaException.EINVAL, describe() + " is already closed");
    }
  }

  /** The public close: EBUSY while anything is open on it or uses it; idempotent. */
  public void close() {
    if (closed.get()) return;
    synchronized (this) {
      if (closed.get()) return;
      children.requireNone(destroyVerb(), this);
      checkNotInUse();
      destroy();
      closed.set(true);
    }
    detach();
  }

  /** Closes everything opened on it, then it; reports the first failure after trying all. */
  void forceClose(List<RuntimeException> failures) {
    if (closed.get()) return;
    List<NativeResource> kids = new ArrayList<>();
    for (Described d : children.snapshot()) kids.add((NativeResource) d);
    kids.sort(Comparator.comparingInt(NativeResource::rank));
    for (NativeResource k : kids) k.forceClose(failures);
    synchronized (this) {
      if (closed.get()) return;
      try {
        beforeForcedClose();
        destroy();
      } catch (RuntimeException e) {
        failures.add(e);
      }
      closed.set(true);
    }
    detach();
  }

  private void detach() {
    if (parent != null) parent.children.remove(this);
    forget();
    if (parent instanceof NativeDeviceContext c && c.borrowed) c.provider.releaseRemovedDevices();
  }
}
