package dev.pekkordma.actors;

import dev.pekkordma.actors.DeviceSession.CqEntry;
import dev.pekkordma.verbs.AsyncEvent;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Reads a device context's async events on the pinned poller dispatcher (it blocks in
 * nextAsyncEvent) and delivers each to its owner: a QP's event to that QP's actor, a CQ's to the
 * CQ's owner, the rest to the device actor. One event or one block-timeout per message to itself,
 * so it stops promptly.
 */
final class AsyncEventReader {
  /** Internal; one may reach the reader after it stopped, which is no news. */
  enum Read implements DeadLetterSuppression { INSTANCE }

  private AsyncEventReader() {}

  static Behavior<Read> create(DeviceSession session) {
    return Behaviors.setup(ctx -> {
      ctx.getSelf().tell(Read.INSTANCE);
      return Behaviors.receiveMessage(r -> {
        AsyncEvent e = session.context.nextAsyncEvent(session.settings.blockTimeout);
        if (e != null) route(session, e, ctx.getLog());
        ctx.getSelf().tell(Read.INSTANCE);
        return Behaviors.same();
      });
    });
  }

  static void route(DeviceSession session, AsyncEvent e, org.slf4j.Logger log) {
    if (e.qp() != null) {
      ActorRef<QpActor.Command> owner = session.qpOwner(e.qp().qpNum());
      if (owner != null) {
        owner.tell(new QpActor.AsyncEventArrived(e.type(), e.qp().qpNum(), null));
      } else {
        log.debug("{}: {} for a QP no actor owns any more", session.name, e);
      }
    } else if (e.cq() != null) {
      CqEntry entry = session.cqs.get(e.cq());
      if (entry != null) {
        entry.owner.tell(new QpActor.AsyncEventArrived(e.type(), -1, entry));
      } else {
        log.debug("{}: {} for a CQ no actor owns any more", session.name, e);
      }
    } else {
      session.device.tell(new DeviceActor.Raised(e));
    }
  }
}
