package dev.pekkordma.actors;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.runtime.internal.CmDispatcher;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The CM actor's ids on the runtime's CM dispatcher, and who owns each: the listener, connector
 * or connection actor that an id's events go to. Ownership is written before the verb whose
 * event it is for, hence a concurrent map and not messages. Every id made here or arriving for
 * a listener here is tracked, so that the CM actor can destroy what its children left.
 *
 * <p>Routing only tells an actor, so the dispatcher may route in the thread that raised the
 * event; refusing a request nobody listens for calls into the CM, so that goes to
 * {@code refusals} (the actor system's dispatcher).
 */
final class CmRouter {
  private static final Logger log = LoggerFactory.getLogger(CmRouter.class);
  private final CmDispatcher cm;
  private final Executor refusals;
  private final Map<CmId, ActorRef<CmEvent>> owners = new ConcurrentHashMap<>();
  private final Set<CmId> live = ConcurrentHashMap.newKeySet();

  CmRouter(CmDispatcher cm, Executor refusals) {
    this.cm = cm;
    this.refusals = refusals;
  }

  CmId createId(Object context) {
    CmId id = cm.createId(context, RdmaPortSpace.TCP, CmDispatcher.Delivery.IMMEDIATE,
        this::route, this::readerFailed);
    live.add(id);
    return id;
  }

  void own(CmId id, ActorRef<CmEvent> owner) {
    owners.put(id, owner);
  }

  void disown(CmId id) {
    owners.remove(id);
  }

  /** Destroys the id (and its QP, if it still has one), forgetting its owner. */
  void destroy(CmId id, Logger log) {
    owners.remove(id);
    live.remove(id);
    cm.destroy(id, false);
  }

  /** Rejects a connection request (if it can still be) and destroys its id. */
  void refuse(CmId id, byte[] privateData, Logger log) {
    try {
      id.reject(privateData);
    } catch (RuntimeException e) {
      log.debug("rejecting {} failed: {}", id, e.getMessage());
    }
    destroy(id, log);
  }

  /** Delivers one event; a connection request nobody listens for any more is refused. */
  private void route(CmEvent e) {
    if (e.type() == CmEventType.CONNECT_REQUEST) {
      live.add(e.id());
      ActorRef<CmEvent> listener = owners.get(e.listenId());
      if (listener != null) {
        listener.tell(e);
      } else {
        refusals.execute(() -> refuse(e.id(), null, log));
      }
      return;
    }
    ActorRef<CmEvent> owner = owners.get(e.id());
    if (owner != null) {
      owner.tell(e);
    } else {
      log.debug("{} for {}, which no actor owns any more", e, e.id());
    }
  }

  private void readerFailed(RuntimeException cause) {
    log.error("no more CM events will reach the actors: {}", cause.getMessage());
  }

  /** Destroys every id still alive; the CM actor's children have stopped. */
  void destroyAll(Logger log) {
    List<CmId> left = new ArrayList<>(live);
    for (CmId id : left) destroy(id, log);
  }
}
