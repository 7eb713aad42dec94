package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.runtime.internal.datagram.AddressHandles;

/**
 * The registered send slots: as many as the send queue is deep, so a post never overruns it.
 * A slot is taken when its datagram is copied in and comes back with its send's completion,
 * with the address handle it named.
 */
final class SendSlots {
  private final int[] free;
  private int freeCount;
  private final AddressHandles.CountedHandle[] handles;

  SendSlots(int count) {
    free = new int[count];
    for (int i = count - 1; i >= 0; i--) free[freeCount++] = i;
    handles = new AddressHandles.CountedHandle[count];
  }

  boolean available() {
    return freeCount > 0;
  }

  int inFlight() {
    return handles.length - freeCount;
  }

  int take(AddressHandles.CountedHandle handle) {
    int slot = free[--freeCount];
    handles[slot] = handle;
    return slot;
  }

  /** The slot's send completed: its handle, to release (null if the slot was not taken). */
  AddressHandles.CountedHandle complete(int slot) {
    if (slot < 0 || slot >= handles.length) return null;
    AddressHandles.CountedHandle h = handles[slot];
    if (h == null) return null;
    handles[slot] = null;
    free[freeCount++] = slot;
    return h;
  }
}
