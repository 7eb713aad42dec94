package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.WorkCompletions;

/** The owner of a CQ that its hub polls: hears each batch, in the hub's thread. */
@InternalApi
public interface CompletionHandler {
  /** {@code n} completions at the start of {@code wcs}; copy what you keep before returning. */
  void completions(WorkCompletions wcs, int n);

  /** Polling or arming the CQ failed; the hub polls it no more. */
  void failed(RuntimeException cause);
}
