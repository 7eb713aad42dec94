package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.CmId;

/** An id of a {@link SoftCmEventChannel}, whatever its port space. */
interface SoftChannelId extends CmId {
  /** Destroys the id and its QP, swallowing errors: the provider is closing. */
  void destroyForShutdown();
}
