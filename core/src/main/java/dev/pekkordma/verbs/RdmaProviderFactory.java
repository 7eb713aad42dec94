package dev.pekkordma.verbs;

import com.typesafe.config.Config;

/**
 * A provider implementation, found with {@link java.util.ServiceLoader}: the native module
 * registers one, so core needs no compile-time link to it.
 */
public interface RdmaProviderFactory {
  /** "soft" or "native". */
  String name();

  /** Whether a device of this provider is present; "auto" picks the native one when true. */
  boolean devicesPresent();

  /** Why no device is present and how to fix it, for the error when one is required. */
  String whyUnavailable();

  /** Creates the provider from the library's config (the {@code pekko-rdma} block). */
  RdmaProvider create(Config libraryConfig);
}
