/**
 * The C libraries' functions as jnr-ffi binds them. jnr-ffi implements these interfaces in a class
 * of its own making, in an unnamed module, which reaches exported types only: this package is
 * exported for that alone. The native provider calls them through its package-private {@code
 * Verbs}; nothing else may.
 */
@InternalApi
package dev.pekkordma.nativeverbs.ffi;

import dev.pekkordma.annotation.InternalApi;
