package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The system's connection manager: one CM event channel, read by an agent on a thread of its own,
 * which hands each event to the owner of its id (a stage's async callback, an actor's tell). A
 * CONNECT_REQUEST goes to the listener's owner, and the new id is the listener's until someone
 * takes it with {@link #own}.
 *
 * <p>Only an id's owner destroys it, in its own thread: at the system's end the owners tear down
 * their connections while this reader stops, and a second hand in the same id (or its QP) would
 * free it under the owner's calls. The channel goes after the last owned id.
 *
 * <p>A channel that tells of each event as it is posted ({@link CmEventChannel#notifyOnPost}: the
 * software provider's) has its events delivered in the posting thread when their owner takes
 * them {@link Delivery#IMMEDIATE}ly, saving this thread's wake-up on a connection's way up. One
 * thread delivers at a time, in the channel's order: an event this thread must deliver (an
 * owner's that is not immediate, one nobody owns, a device removal) waits for it, and so does
 * everything after it.
 *
 * <p>If reading events fails (not at the system's end), every owner hears why: no CM event will
 * reach it again, so what waits for one (a listener, a connect) must not wait on. New ids are
 * refused from then on, naming the same reason.
 */
@InternalApi
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
  private final boolean direct; // the channel tells of each post: see notifyOnPost
  private final ReentrantLock delivering = new ReentrantLock(); // one deliverer at a time
  private volatile boolean posted; // an event was posted since a deliverer last looked
  private final ArrayDeque<CmEvent> forThread = new ArrayDeque<>(); // guarded by delivering
  private volatile boolean threadHasWork; // forThread has events: written under delivering
  private final Semaphore wakeUp = new Semaphore(0);
  private volatile long onThread; // events this dispatcher's thread delivered (only it writes)

  /** Where an owner's events may be delivered. */
  public enum Delivery {
    /** On the dispatcher's thread: the owner may take its time or call into the CM. */
    DISPATCHER_THREAD,
    /**
     * Possibly in the thread that raised the event, which may hold the provider's locks: for an
     * owner that only hands the event on, without blocking (an async callback, an actor's tell).
     */
    IMMEDIATE
  }

  /** Where an id's events go, and where the news goes that they have stopped. */
  private record Owner(Consumer<CmEvent> events, Consumer<RuntimeException> readerFailed,
      Delivery delivery) {}

  public CmDispatcher(CmEventChannel channel, Consumer<String> deviceRemoved) {
    this.channel = channel;
    this.deviceRemoved = deviceRemoved;
    this.direct = channel.notifyOnPost(this::posted);
  }

  @Override
  public String roleName() {
    return "CM event dispatcher";
  }

  @Override
  public int doWork() {
    if (direct) return posted || threadHasWork ? deliver(true) : 0;
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
    } finally {
      onThread += n;
    }
    return n;
  }

  @Override
  public void awaitWork(Duration timeout) {
    if (direct) {
      try {
        if (wakeUp.tryAcquire(timeout.toNanos(), TimeUnit.NANOSECONDS)) wakeUp.drainPermits();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return;
    }
    try {
      waiting = channel.awaitEvent(timeout);
    } catch (RuntimeException ex) {
      failed(ex);
    }
  }

  /** An event was queued, in the thread that posted it: delivered here if it may be. */
  private void posted() {
    posted = true;
    deliver(false);
  }

  /**
   * Delivers what is queued, in order, unless another thread is delivering (it looks again
   * after it stops). On this dispatcher's own thread ({@code here}) everything; elsewhere only
   * to immediate owners, leaving the first event that is not, and all after it, for this thread.
   */
  private int deliver(boolean here) {
    int n = 0;
    while (true) {
      if (here) {
        delivering.lock(); // a poster's deliveries are hand-offs: it lets go soon
      } else if (!delivering.tryLock()) {
        return n; // the deliverer looks again after it lets go
      }
      boolean leftForThread;
      try {
        posted = false;
        n += here ? deliverAll() : deliverImmediate();
        leftForThread = !forThread.isEmpty();
      } catch (RuntimeException ex) {
        if (here) failed(ex);
        log.warn("taking a posted CM event failed: {}", ex.getMessage());
        return n;
      } finally {
        delivering.unlock();
      }
      if (!posted || (leftForThread && !here)) return n;
    }
  }

  private int deliverAll() {
    int n = 0;
    CmEvent e;
    while ((e = forThread.poll()) != null || (e = channel.awaitEvent(Duration.ZERO)) != null) {
      dispatch(e);
      n++;
      onThread++;
    }
    threadHasWork = false;
    return n;
  }

  private int deliverImmediate() {
    if (!forThread.isEmpty()) return 0; // the thread delivers those first, and what came after
    int n = 0;
    CmEvent e;
    while ((e = channel.awaitEvent(Duration.ZERO)) != null) {
      if (!immediate(e)) {
        forThread.add(e);
        threadHasWork = true;
        wakeUp.release();
        return n;
      }
      dispatch(e);
      n++;
    }
    return n;
  }

  /** Whether {@code e} may be delivered in the thread that posted it. */
  private boolean immediate(CmEvent e) {
    if (e.type() == CmEventType.DEVICE_REMOVAL) return false;
    CmId key = e.type() == CmEventType.CONNECT_REQUEST ? e.listenId() : e.id();
    Owner owner = key == null ? null : owners.get(key);
    return owner != null && owner.delivery() == Delivery.IMMEDIATE;
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
    return createId(context, RdmaPortSpace.TCP, Delivery.DISPATCHER_THREAD, events, readerFailed);
  }

  /**
   * As above, in port space {@code space} (UDP for datagram ids: SIDR, multicast). Refused once
   * the events have stopped.
   */
  public CmId createId(Object context, RdmaPortSpace space, Consumer<CmEvent> events,
      Consumer<RuntimeException> readerFailed) {
    return createId(context, space, Delivery.DISPATCHER_THREAD, events, readerFailed);
  }

  /** As above, its events delivered as {@code delivery} allows. */
  public CmId createId(Object context, RdmaPortSpace space, Delivery delivery,
      Consumer<CmEvent> events, Consumer<RuntimeException> readerFailed) {
    checkReader();
    CmId id = channel.createId(context, space);
    owners.put(id, new Owner(events, readerFailed, delivery));
    if (readerFailure != null) { // it failed in between: the owners it told did not include us
      destroy(id, false);
      checkReader();
    }
    return id;
  }

  /** From now on the id's events go to {@code events}; refused once they have stopped. */
  public void own(CmId id, Consumer<CmEvent> events, Consumer<RuntimeException> readerFailed) {
    own(id, Delivery.DISPATCHER_THREAD, events, readerFailed);
  }

  /** As above, its events delivered as {@code delivery} allows. */
  public void own(CmId id, Delivery delivery, Consumer<CmEvent> events,
      Consumer<RuntimeException> readerFailed) {
    checkReader();
    owners.put(id, new Owner(events, readerFailed, delivery));
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
    if (direct) forgetTaken(id);
    if (readerStopped) closeChannelWhenUnused();
  }

  /**
   * What the channel does for a destroyed id's queued events, for those taken from it already
   * and waiting for this thread: they go, and the connection requests of a listener are rejected
   * and destroyed (nobody will see them).
   */
  private void forgetTaken(CmId id) {
    List<CmId> requests = new ArrayList<>();
    delivering.lock();
    try {
      forThread.removeIf(e -> {
        if (e.type() == CmEventType.CONNECT_REQUEST && e.listenId() == id) requests.add(e.id());
        return e.id() == id || requests.contains(e.id());
      });
    } finally {
      delivering.unlock();
    }
    if (posted) deliver(false); // what was posted while this held the deliverers off
    for (CmId request : requests) destroyQuietly(request, true);
  }

  /** Whether immediate owners hear in the thread that raised the event (the channel allows it). */
  public boolean deliversInPostingThreads() {
    return direct;
  }

  /** How many events this dispatcher's own thread has delivered: for tests. */
  public long deliveredOnItsThread() {
    return onThread;
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
