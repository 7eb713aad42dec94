/**
 * Pekko Cluster drives RDMA connections.
 *
 * <p>{@link dev.pekkordma.cluster.RdmaCluster#get RdmaCluster.get(system)} on each member binds an
 * RDMA CM listener (through the actors module's CM actors), advertises it as an {@link
 * dev.pekkordma.cluster.Endpoint} under a Receptionist key, and asks every other member for its
 * own. Between each pair the member with the lower address connects: when the other comes Up, or
 * on the first message with {@code pekko-rdma.cluster.connect = lazy}. An unreachable member's
 * messages wait (streams backpressure); a removed member's connection closes, what was queued or
 * in flight fails, and its QP and buffers go. A member whose endpoint cannot talk to ours, or
 * that advertises another's, or that never answers, is refused with a {@link
 * dev.pekkordma.cluster.PeerEvent.Refused} event and an error in the log.
 *
 * <p>Every byte another member sends is checked before it is used: each frame in full (length,
 * kind, grant, channel) and against the credits this member granted, each coordinator message
 * for exactly its fields, each endpoint for values that can be used. A member that breaks the
 * wire protocol has its connection closed and is refused ({@code PROTOCOL_VIOLATION}, naming
 * the rule) until it has been unreachable; a message for a channel not open here is dropped and
 * logged (a flood of them in a few lines). A connection's QP takes no one-sided operations.
 *
 * <p>Messages travel on typed {@link dev.pekkordma.cluster.Channel}s: {@code send} to a member,
 * {@code subscribe} to what arrives, and a per-member {@code Flow} or {@code Sink} over the
 * member's connection (each message one RDMA SEND with a small header, paced by credits, see
 * {@code Credits}, so that a send always finds a receive posted). {@code streamFlow} and {@code
 * streamSink} open a connection of their own through the streams module instead, backpressured
 * from the member's {@code handleStreams} handler back to the sender.
 */
package dev.pekkordma.cluster;
