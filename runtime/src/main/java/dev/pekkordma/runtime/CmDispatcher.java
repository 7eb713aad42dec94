package dev.pekkordma.runtime;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The system's connection manager: one CM event channel, read by an agent on a pinned thread,
 * which hands each event to the owner of its id (a stage's async callback, an actor's tell). A
 * CONNECT_REQUEST goes to the listener's owner, and the new id is the listener's until someone
 * takes it with {@link #own}.
 *
 * <p>Only an id's owner destroys it, in its own thread: at the system's end the owners tear down
 * their connections while this reader stops, and a second hand in the same id (or its QP) would
 * free it under the owner's calls. The channel goes after the last owned id.
 *
 * <p>If reading events fails (not at the system's end), every owner hears why: no CM event will
 * reach it again, so what waits for one (a listener, a connect) must not wait on. New ids are
 * refused from then on, naming the same reason.
 */
public final class CmDispatcher implements Agent {
  private static final Logger log = LoggerFactory.getLogger(CmDispatcher.class);
  private static final int EVENTS_PER_ROUND = 64;

  private final CmEventChannel channel;
  private final Map<CmId, Owner> owners = new ConcurrentHashMap<>();
  private final Consumer<String> deviceRemoved;
  private volatile boolean readerStopped;
  private volatile RuntimeException readerFailure;
  private boolean channelClosed; // guarded by this
  private CmEvent waiting; // read by awaitWork, for the next round

  /** Where an id's events go, and where the news goes that they have stopped. */
  private record Owner(Consumer<CmEvent> events, Consumer<RuntimeException> readerFailed) {}

  CmDispatcher(CmEventChannel channel, Consumer<String> deviceRemoved) {
    this.channel = channel;
    this.deviceRemoved = deviceRemoved;
  }

  @Override
  public String roleName() {
    return "CM event dispatcher";
  }

  @Override
  public int doWork() {
    int n = 0;
    try {
      CmEvent e = waiting;
      waiting = null;
      if (e == null) e = channel.awaitEvent(Duration.ZERO);
      while (e != null) {
        dispatch(e);
        if (++n == EVENTS_PER_ROUND) break;
        e = channel.awaitEvent(Duration.ZERO);
      }
    } catch (RuntimeException ex) {
      failed(ex);
    }
    return n;
  }

  @Override
  public void awaitWork(Duration timeout) {
    try {
      waiting = channel.awaitEvent(timeout);
    } catch (RuntimeException ex) {
      failed(ex);
    }
  }

  private void failed(RuntimeException ex) {
    log.warn("reading CM events failed, no more will come: {}", ex.getMessage());
    readerFailure = ex;
    for (Owner owner : owners.values()) tellFailure(owner, ex);
    throw new Terminated("the CM event channel failed: " + ex.getMessage());
  }

  /** The reader stopped: the channel goes now, or after its owners destroyed their last ids. */
  @Override
  public void onClose() {
    readerStopped = true;
    closeChannelWhenUnused();
  }

  private void dispatch(CmEvent e) {
    if (e.type() == CmEventType.DEVICE_REMOVAL && e.id() != null && e.id().verbs() != null) {
      // whoever holds a context of the device must let go: the kernel's removal waits for it
      deviceRemoved.accept(e.id().verbs().device().name());
    }
    CmId key = e.type() == CmEventType.CONNECT_REQUEST ? e.listenId() : e.id();
    Owner owner = key == null ? null : owners.get(key);
    if (owner == null) {
      if (e.type() == CmEventType.CONNECT_REQUEST) {
        log.debug("a connection request for a listener that is gone: rejecting it");
        destroyQuietly(e.id(), true);
      } else {
        log.debug("{} for an id nobody owns", e);
      }
      return;
    }
    if (e.type() == CmEventType.CONNECT_REQUEST) owners.put(e.id(), owner);
    try {
      owner.events().accept(e);
    } catch (RuntimeException ex) {
      log.warn("delivering {} failed: {}", e, ex.getMessage());
    }
  }

  private static void tellFailure(Owner owner, RuntimeException cause) {
    try {
      owner.readerFailed().accept(cause);
    } catch (RuntimeException ex) {
      log.warn("telling an owner that CM events stopped failed: {}", ex.getMessage());
    }
  }

  /**
   * A new id whose events go to {@code events}; {@code readerFailed} hears if they stop for
   * good. Refused once they have.
   */
  public CmId createId(Object context, Consumer<CmEvent> events,
      Consumer<RuntimeException> readerFailed) {
    return createId(context, RdmaPortSpace.TCP, events, readerFailed);
  }

  /**
   * As above, in port space {@code space} (UDP for datagram ids: SIDR, multicast). Refused once
   * the events have stopped.
   */
  public CmId createId(Object context, RdmaPortSpace space, Consumer<CmEvent> events,
      Consumer<RuntimeException> readerFailed) {
    checkReader();
    CmId id = channel.createId(context, space);
    owners.put(id, new Owner(events, readerFailed));
    if (readerFailure != null) { // it failed in between: the owners it told did not include us
      destroy(id, false);
      checkReader();
    }
    return id;
  }

  /** From now on the id's events go to {@code events}; refused once they have stopped. */
  public void own(CmId id, Consumer<CmEvent> events, Consumer<RuntimeException> readerFailed) {
    checkReader();
    owners.put(id, new Owner(events, readerFailed));
    checkReader(); // the caller destroys the id when it fails, as it would have anyway
  }

  /** The id's events go nowhere from now on (they are logged); the caller destroys it later. */
  public void disown(CmId id) {
    owners.remove(id);
  }

  private void checkReader() {
    RuntimeException failure = readerFailure;
    if (failure != null) {
      throw new IllegalStateException("the CM event reader has stopped: "
          + failure.getMessage(), failure);
    }
  }

  /** Forgets the id and destroys it (rejecting it first if asked: a request nobody took). */
  public void destroy(CmId id, boolean reject) {
    owners.remove(id);
    destroyQuietly(id, reject);
    if (readerStopped) closeChannelWhenUnused();
  }

  /** Ids with an owner: for tests and leak checks. */
  public int ownedIds() {
    return owners.size();
  }

  private static void destroyQuietly(CmId id, boolean reject) {
    if (reject) {
      try {
        id.reject(null);
      } catch (RuntimeException e) {
        log.debug("rejecting a connection request failed: {}", e.getMessage());
      }
    }
    try {
      if (id.qp() != null) id.destroyQp();
    } catch (RuntimeException e) {
      log.debug("destroying a CM id's QP failed: {}", e.getMessage());
    }
    try {
      id.close();
    } catch (RuntimeException e) {
      log.warn("destroying a CM id failed: {}", e.getMessage());
    }
  }

  private synchronized void closeChannelWhenUnused() {
    if (channelClosed || !owners.isEmpty()) return;
    try {
      channel.close();
      channelClosed = true;
    } catch (RuntimeException e) {
      // EBUSY while an owner is between forgetting its id and destroying it: its destroy() is
      // the next try
      log.debug("closing the CM event channel failed: {}", e.getMessage());
    }
  }
}
