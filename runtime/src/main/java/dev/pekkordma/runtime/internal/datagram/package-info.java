/** pekko-rdma's own machinery: not an API (see {@link dev.pekkordma.annotation.InternalApi}). */
@InternalApi
package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
