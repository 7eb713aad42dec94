package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.verbs.MemoryRegion;

/** Memory registered for a connection, with the budget's reservation for it. */
record Registered(OffHeapBuffer memory, MemoryRegion mr, MemoryBudget.Reservation bytes) {
  /** Deregisters; a failure shows when the PD goes. */
  void deregister() {
    if (mr == null) return;
    try {
      mr.close();
    } catch (RuntimeException e) {
      // the PD's deallocation reports what is left
    }
  }

  /** Frees the memory and gives its bytes back: after {@link #deregister}. */
  void free() {
    memory.close();
    if (bytes != null) bytes.close();
  }
}
