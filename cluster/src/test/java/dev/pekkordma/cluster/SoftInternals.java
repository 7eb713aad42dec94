package dev.pekkordma.cluster;

import dev.pekkordma.actors.BufferPool;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.RdmaProvider;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;

/**
 * What a peer would have to guess, read out of the software provider for a test: the regions
 * registered on a provider's devices. Keys are 24-bit slot indexes with an 8-bit tag, easy to
 * guess; addresses less so; a test stands in for a peer that learnt both.
 */
final class SoftInternals {
  private SoftInternals() {}

  /** The regions on {@code provider}'s devices that allow what a buffer pool allows. */
  static List<MemoryRegion> poolRegions(RdmaProvider provider) {
    List<MemoryRegion> found = new ArrayList<>();
    try {
      // the provider the runtime hands out says why it was chosen; the soft one is inside
      Object soft = provider.getClass().getSimpleName().equals("ChosenProvider")
          ? field(provider, "provider") : provider;
      for (Object device : (List<?>) field(soft, "devices")) {
        for (Object o : (Object[]) field(field(device, "memoryKeys"), "slots")) {
          if (o instanceof MemoryRegion mr && mr.access() == BufferPool.ACCESS) found.add(mr);
        }
      }
    } catch (ReflectiveOperationException e) {
      throw new AssertionError("the software provider's insides changed", e);
    }
    return found;
  }

  private static Object field(Object o, String name) throws ReflectiveOperationException {
    for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
      } catch (NoSuchFieldException e) {
        // look in its superclass
      }
    }
    throw new NoSuchFieldException(o.getClass() + "." + name);
  }
}
