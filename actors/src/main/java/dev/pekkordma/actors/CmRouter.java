package dev.pekkordma.actors;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;

/**
 * The CM event channel and who owns each of its ids: the listener, connector or connection actor
 * that an id's events go to. Ownership is written before the verb whose event it is for, hence a
 * concurrent map and not messages. Every id made on the channel or arriving on it is tracked, so
 * that the CM actor can destroy what its children left before it closes the channel.
 */
final class CmRouter {
  final CmEventChannel channel;
  private final Map<CmId, ActorRef<CmEvent>> owners = new ConcurrentHashMap<>();
  private final Set<CmId> live = ConcurrentHashMap.newKeySet();
  private final Consumer<String> deviceRemoved;

  CmRouter(CmEventChannel channel, Consumer<String> deviceRemoved) {
    this.channel = channel;
    this.deviceRemoved = deviceRemoved;
  }

  CmId createId(Object context) {
    CmId id = channel.createId(context);
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
    try {
      if (id.qp() != null) id.destroyQp();
    } catch (RuntimeException e) {
      log.warn("destroying the QP of {} failed: {}", id, e.getMessage());
    }
    try {
      id.close();
    } catch (RuntimeException e) {
      log.warn("destroying {} failed: {}", id, e.getMessage());
    }
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
  void route(CmEvent e, Logger log) {
    if (e.type() == CmEventType.CONNECT_REQUEST) {
      live.add(e.id());
      ActorRef<CmEvent> listener = owners.get(e.listenId());
      if (listener != null) {
        listener.tell(e);
      } else {
        refuse(e.id(), null, log);
      }
      return;
    }
    if (e.type() == CmEventType.DEVICE_REMOVAL && e.id() != null && e.id().verbs() != null) {
      deviceRemoved.accept(e.id().verbs().device().name());
    }
    ActorRef<CmEvent> owner = owners.get(e.id());
    if (owner != null) {
      owner.tell(e);
    } else {
      log.debug("{} for {}, which no actor owns any more", e, e.id());
    }
  }

  /** Destroys every id still alive; the CM actor's children have stopped. */
  void destroyAll(Logger log) {
    List<CmId> left = new ArrayList<>(live);
    for (CmId id : left) destroy(id, log);
  }
}
