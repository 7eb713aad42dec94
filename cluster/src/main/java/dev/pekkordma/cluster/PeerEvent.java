package dev.pekkordma.cluster;

import org.apache.pekko.actor.Address;

/** What happens to the RDMA connection with a member; subscribe with {@link RdmaCluster}. */
public sealed interface PeerEvent {
  Address member();

  /** Connected: messages flow. */
  record Connected(Address member, Endpoint endpoint) implements PeerEvent {}

  /**
   * The connection ended while the member is still in the cluster: sends in flight are failed,
   * queued ones wait for the next connection.
   */
  record Disconnected(Address member, String reason) implements PeerEvent {}

  /** The member is unreachable: messages to it wait (a per-peer Sink backpressures). */
  record Paused(Address member) implements PeerEvent {}

  /** Reachable again: queued messages go. */
  record Resumed(Address member) implements PeerEvent {}

  /**
   * The member left or was downed (in the cluster's order: before any new incarnation of its
   * address). Messages queued for it fail now; its connection closes, and with it its QP and
   * buffers; those in flight fail as the connection's flush reports them (within {@code
   * pekko-rdma.cluster.flush-timeout}).
   */
  record Removed(Address member) implements PeerEvent {}

  /** No connection will be made to the member; messages to it fail with {@code detail}. */
  record Refused(Address member, Reason reason, String detail) implements PeerEvent {}

  enum Reason {
    /** It advertises the same CM address as another member (or as this one). */
    ENDPOINT_CONFLICT,
    /** Its provider, transport or protocol cannot talk to this member's. */
    INCOMPATIBLE,
    /** It did not describe its endpoint, or did not answer the connection, in time. */
    NO_ANSWER,
    /** It rejected the connection repeatedly. */
    REJECTED,
    /**
     * It sent what the wire protocol forbids (a malformed frame, more than its credits): its
     * connection was closed, and none is made until it has been unreachable and is reachable
     * again.
     */
    PROTOCOL_VIOLATION
  }
}
