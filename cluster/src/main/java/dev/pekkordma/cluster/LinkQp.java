package dev.pekkordma.cluster;

import dev.pekkordma.actors.QpActor;
import dev.pekkordma.actors.QpSpec;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import org.apache.pekko.actor.typed.ActorRef;

/** The QP a link runs on: queues sized for the credits, and nothing but SEND and receive. */
final class LinkQp {
  private LinkQp() {}

  static QpSpec spec(ClusterSettings s) {
    // credits bound the sends in flight by the peer's depth; +1 for a credit frame beside them
    return QpSpec.rc().withQueues(s.receiveDepth + 1, s.receiveDepth)
        .withCqSize(2 * s.receiveDepth + 8);
  }

  /**
   * Takes away the remote read, write and atomic access the CM gave the QP: the peer could
   * otherwise reach every buffer of the pool, which is registered for them. The window from
   * ESTABLISHED until this is done can be closed only where the QP is made (the actors).
   */
  static QpActor.Modify sendAndReceiveOnly(ActorRef<QpActor.ModifyResult> replyTo) {
    return new QpActor.Modify(new QpAttributes().state(QpState.RTS).accessFlags(0), replyTo);
  }
}
