package dev.pekkordma.cluster;

import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;

/**
 * What members' coordinators say to each other over Pekko remoting (serialized by {@link
 * ProtocolSerializer}). Each coordinator registers under {@link #KEY}; the others ask it for its
 * endpoint.
 */
final class Protocol {
  private Protocol() {}

  /** Marks the messages that cross the network. */
  interface Remote {}

  /** What a coordinator takes from other members. */
  interface Request extends Coordinator.Command, Remote {}

  static final ServiceKey<Request> KEY =
      ServiceKey.create(Request.class, "pekko-rdma-cluster-endpoint");

  /** Answer with this member's {@link Endpoint}. */
  record Describe(ActorRef<Endpoint> replyTo) implements Request {}

  /**
   * Lazy mode: the member with the higher address has a message for the one with the lower, which
   * is the one that connects. {@code uid} is the asking member's.
   */
  record ConnectToMe(long uid) implements Request {}
}
