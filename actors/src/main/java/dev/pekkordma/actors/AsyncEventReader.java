package dev.pekkordma.actors;

import dev.pekkordma.actors.DeviceSession.CqEntry;
import dev.pekkordma.runtime.internal.Agent;
import dev.pekkordma.verbs.AsyncEvent;
import java.time.Duration;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a device context's async events (it blocks in nextAsyncEvent while idle) and delivers
 * each to its owner: a QP's event to that QP's actor, a CQ's to the CQ's owner, the rest to the
 * device actor.
 */
final class AsyncEventReader implements Agent {
  private static final Logger log = LoggerFactory.getLogger(AsyncEventReader.class);
  private final DeviceSession session;
  private AsyncEvent waiting; // read by awaitWork, for the next round

  AsyncEventReader(DeviceSession session) {
    this.session = session;
  }

  @Override
  public String roleName() {
    return "async event reader of " + session.name;
  }

  @Override
  public int doWork() {
    AsyncEvent e = waiting;
    waiting = null;
    if (e == null) e = session.context.nextAsyncEvent(Duration.ZERO);
    if (e == null) return 0;
    route(e);
    return 1;
  }

  @Override
  public void awaitWork(Duration timeout) {
    waiting = session.context.nextAsyncEvent(timeout);
  }

  private void route(AsyncEvent e) {
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
