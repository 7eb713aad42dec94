package dev.pekkordma.verbs.spi;

import dev.pekkordma.verbs.RdmaException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The resources open on one resource (the PDs and CQs of a device context, the MRs and QPs of a
 * PD): verbs refuse to destroy a resource while any is, with EBUSY naming them.
 */
public final class OpenChildren {
  private final Set<Described> open = ConcurrentHashMap.newKeySet();

  public void add(Described child) {
    open.add(child);
  }

  public void remove(Described child) {
    open.remove(child);
  }

  public boolean isEmpty() {
    return open.isEmpty();
  }

  /** The children open now, in no particular order. */
  public List<Described> snapshot() {
    return new ArrayList<>(open);
  }

  /** Throws EBUSY, as {@code verb} does, naming what is still open on {@code owner}. */
  public void requireNone(String verb, Described owner) {
    if (open.isEmpty()) return;
    throw new RdmaException(verb, RdmaException.EBUSY,
        owner.describe() + " still has open: " + names(open));
  }

  /** The resources' names, comma-separated. */
  public static String names(Iterable<? extends Described> resources) {
    StringBuilder b = new StringBuilder();
    for (Described r : resources) b.append(b.length() == 0 ? "" : ", ").append(r.describe());
    return b.toString();
  }
}
