package dev.pekkordma.actors;

import dev.pekkordma.verbs.DeviceContext;

/** Where a device actor gets its context, and how it gives it back. */
interface ContextSource {
  /** The device's name, for messages and actor names. */
  String name();

  /** Opens (or acquires) the context; fails with the provider's exception. */
  OpenedContext open();

  /** An open context and what gives it back (close it, or release what holds it). */
  record OpenedContext(DeviceContext context, Runnable release) {}
}
