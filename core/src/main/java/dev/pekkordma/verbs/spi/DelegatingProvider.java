package dev.pekkordma.verbs.spi;

import dev.pekkordma.verbs.RdmaProvider;

/** A provider that serves through another, as the one RdmaProviders chose does: what it wraps. */
public interface DelegatingProvider {
  RdmaProvider delegate();
}
