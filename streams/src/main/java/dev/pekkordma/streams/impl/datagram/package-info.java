/** pekko-rdma's own machinery: not an API (see {@link dev.pekkordma.annotation.InternalApi}). */
@InternalApi
package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.annotation.InternalApi;
