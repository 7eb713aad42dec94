/** native: see the README for what this module holds and what is still to come. */
@InternalApi
package dev.pekkordma.nativeverbs;

import dev.pekkordma.annotation.InternalApi;
