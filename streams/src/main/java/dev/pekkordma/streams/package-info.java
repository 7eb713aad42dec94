/**
 * Pekko Streams over RDMA, as Pekko's {@code Tcp} (javadsl).
 *
 * <p>{@link dev.pekkordma.streams.RdmaStreams#get RdmaStreams.get(system)} is the entry point,
 * as {@code Tcp.get(system)}: {@code bind} gives a source of Pekko's own {@code
 * Tcp.IncomingConnection}s materializing a {@code Tcp.ServerBinding}; {@code
 * outgoingConnection} a flow materializing a {@code Tcp.OutgoingConnection}. Unlike TCP, one
 * ByteString written is one ByteString read.
 *
 * <p>How a connection works (the stages are in {@code impl}): each side registers a receive ring
 * and tells the other where it is in the CM's private data; data goes by RDMA WRITE WITH IMM
 * into the peer's next slot, and each free slot is a credit the writer holds. The receiver
 * frees a slot, and returns its credit, only when downstream has taken the message, so a slow
 * consumer slows the producer through RDMA itself and neither side buffers more than its ring.
 * Upstream's completion sends a FIN after the last write; the peer answers FIN_ACK once its
 * application has taken everything, and only then is the connection torn down.
 *
 * <p>Threads: each connection stage posts and polls on its own (the stream's) thread. A device
 * hub per device context (a PD and a completion channel) has a poller thread that waits for
 * completion events and wakes the stage whose CQ fired; another reads CM events and hands each
 * to its stage. Nothing on the data path allocates per work
 * request but the ByteStrings handed downstream; {@code bulkBufferSource} hands out the receive
 * ring's slots themselves ({@link dev.pekkordma.streams.ReceivedBuffer}), preallocated leases
 * that give their slot back on release.
 *
 * <p>Settings: {@code pekko-rdma.streams} and {@code pekko-rdma.streams.bulk} in this module's
 * reference.conf, each checked at start and named when wrong; {@link
 * dev.pekkordma.streams.RdmaStreamSettings} changes them per call.
 */
package dev.pekkordma.streams;
