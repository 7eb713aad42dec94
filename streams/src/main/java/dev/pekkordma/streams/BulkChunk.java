package dev.pekkordma.streams;

import java.nio.ByteBuffer;

/**
 * Data for the bulk sink written straight into registered memory: the sink leases a registered
 * send buffer, hands it here as a ByteBuffer (position 0, limit the most one write carries),
 * and sends what was written, {@code [0, position)}, by RDMA WRITE from that buffer: no copy
 * but the one this method makes. Called on the stream's thread, once per element, when the
 * peer has a free slot; the buffer goes back to the pool after the write's completion.
 */
@FunctionalInterface
public interface BulkChunk {
  void writeTo(ByteBuffer registered);
}
