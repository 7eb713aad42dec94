package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The streams' connection manager: one CM event channel, read by an actor on the pinned poller
 * dispatcher (it blocks there, at most a block-timeout at a time), which hands each event to
 * the stage that owns its id through that stage's async callback. A CONNECT_REQUEST goes to the
 * listener's owner, and the new id is the listener's until a connection stage takes it.
 *
 * <p>Only an id's owner destroys it, in its own thread: at the system's end the stages tear
 * down their connections while this reader stops, and a second hand in the same id (or its
 * QP) would free it under the owner's calls. The channel goes after the last owned id.
 *
 * <p>If reading events fails (not at the system's end), every owner hears why: no CM event
 * will reach it again, so what waits for one (a listener, a connect) must not wait on. New ids
 * are refused from then on, naming the same reason.
 */
public final class CmService {
  private static final Logger log = LoggerFactory.getLogger(CmService.class);

  private final CmEventChannel channel;
  private final Map<CmId, Owner> owners = new ConcurrentHashMap<>();
  private final ActorRef<Spin> reader;
  private final Consumer<String> deviceRemoved;
  private volatile boolean readerStopped;
  private volatile RuntimeException readerFailure;
  private boolean channelClosed; // guarded by this

  private enum Spin implements DeadLetterSuppression { INSTANCE }

  /** Where an id's events go, and where the news goes that they have stopped. */
  private record Owner(Consumer<CmEvent> events, Consumer<RuntimeException> readerFailed) {}

  CmService(ActorSystem<?> system, CmEventChannel channel, String dispatcher,
      Duration blockTimeout, Consumer<String> deviceRemoved) {
    this.channel = channel;
    this.deviceRemoved = deviceRemoved;
    this.reader = system.systemActorOf(reader(blockTimeout), "pekko-rdma-streams-cm",
        DispatcherSelector.fromConfig(dispatcher));
  }

  private Behavior<Spin> reader(Duration blockTimeout) {
    return Behaviors.setup(ctx -> {
      ctx.getSelf().tell(Spin.INSTANCE);
      return Behaviors.receive(Spin.class)
          .onMessageEquals(Spin.INSTANCE, () -> {
            CmEvent e;
            try {
              e = channel.awaitEvent(blockTimeout);
            } catch (RuntimeException ex) {
              log.warn("reading CM events failed, no more will come: {}", ex.getMessage());
              readerFailed(ex);
              return Behaviors.stopped();
            }
            if (e != null) dispatch(e);
            ctx.getSelf().tell(Spin.INSTANCE);
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            shutdown();
            return Behaviors.same();
          })
          .build();
    });
  }

  private void dispatch(CmEvent e) {
    if (e.type() == CmEventType.DEVICE_REMOVAL && e.id() != null && e.id().verbs() != null) {
      // the device's actor holds a context of it too: the kernel's removal waits for it
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

  private void readerFailed(RuntimeException cause) {
    readerFailure = cause;
    for (Owner owner : owners.values()) tellFailure(owner, cause);
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
    checkReader();
    CmId id = channel.createId(context);
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

  private void checkReader() {
    RuntimeException failure = readerFailure;
    if (failure != null) {
      throw new IllegalStateException("the streams' CM event reader has stopped: "
          + failure.getMessage(), failure);
    }
  }

  /** Forgets the id and destroys it (rejecting it first if asked: a request nobody took). */
  public void destroy(CmId id, boolean reject) {
    owners.remove(id);
    destroyQuietly(id, reject);
    if (readerStopped) closeChannelWhenUnused();
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

  /**
   * The reader stopped (at the system's end): the channel goes now, or after its owners have
   * destroyed their last ids. What an owner never destroys goes with the provider, which the
   * system's termination closes.
   */
  private void shutdown() {
    readerStopped = true;
    closeChannelWhenUnused();
  }

  private synchronized void closeChannelWhenUnused() {
    if (channelClosed || !owners.isEmpty()) return;
    try {
      channel.close();
      channelClosed = true;
    } catch (RuntimeException e) {
      // EBUSY while an owner is between forgetting its id and destroying it: its destroy() is
      // the next try
      log.debug("closing the streams' CM event channel failed: {}", e.getMessage());
    }
  }
}
