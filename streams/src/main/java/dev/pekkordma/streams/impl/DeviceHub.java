package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the connections on one device context share: a completion channel (not a PD: each
 * connection has its own, so that no peer's rkey reaches another's ring), whose events an
 * actor on the pinned poller dispatcher waits for. That actor does not poll: it wakes the stage
 * that owns the CQ that fired (one async callback per event, not per completion), and the stage
 * polls its own CQ on its own thread until it is empty, then arms it again. A channel that
 * can hand its events over directly ({@link CompletionChannel#deliverTo}: the software
 * provider's) wakes the stage from the thread that raised the event, one thread switch fewer
 * per wake; then the actor only waits for nothing. The same actor closes CQs (it holds their
 * channel events), and at the end the channel.
 *
 * <p>Reference-counted by {@link Hubs}: made with the first connection on its context, gone
 * after the last.
 */
public final class DeviceHub {
  private static final Logger log = LoggerFactory.getLogger(DeviceHub.class);

  final DeviceContext context;
  final CompletionChannel channel;
  private final Map<CompletionQueue, Runnable> wakers = new ConcurrentHashMap<>();
  /** Given up by their owners, not closed yet: the channel cannot go before them. */
  private final Set<CompletionQueue> closing = ConcurrentHashMap.newKeySet();
  private boolean closed; // guarded by closing
  private final ActorRef<Command> poller;
  private final boolean direct; // the channel hands events to wake(): nothing to wait for
  int references; // guarded by Hubs

  interface Command {}

  private enum Spin implements Command, DeadLetterSuppression { INSTANCE }

  private record CloseCq(CompletionQueue cq) implements Command {}

  private enum Stop implements Command { INSTANCE }

  DeviceHub(ActorSystem<?> system, DeviceContext context, String dispatcher,
      Duration blockTimeout, String name) {
    this.context = context;
    this.channel = context.createCompletionChannel();
    this.direct = channel.deliverTo(this::wake);
    this.poller = system.systemActorOf(behavior(blockTimeout), name,
        DispatcherSelector.fromConfig(dispatcher));
  }

  /** An event handed over directly: in the provider's thread, so only the stage's callback. */
  private void wake(CompletionQueue cq) {
    Runnable wake = wakers.get(cq);
    if (wake == null) return;
    try {
      wake.run();
    } catch (RuntimeException e) {
      log.error("{}: delivering a completion event failed", context.device().name(), e);
    }
  }

  /** A CQ on the hub's channel whose events run {@code wake}; armed by its owner. */
  public CompletionQueue createCq(int entries, Runnable wake) {
    CompletionQueue cq = context.createCq(entries, channel);
    wakers.put(cq, wake);
    return cq;
  }

  /** The owner is done with the CQ (its QP is destroyed): the poller closes it. */
  public void closeCq(CompletionQueue cq) {
    wakers.remove(cq);
    synchronized (closing) {
      closing.add(cq);
      // after the poller's end (the system's termination stops it first, say) nobody else will
      if (closed) closeCq(cq, closing);
      else poller.tell(new CloseCq(cq));
    }
  }

  void stop() {
    poller.tell(Stop.INSTANCE);
  }

  private Behavior<Command> behavior(Duration blockTimeout) {
    return Behaviors.setup(ctx -> {
      if (!direct) ctx.getSelf().tell(Spin.INSTANCE);
      return Behaviors.receive(Command.class)
          .onMessageEquals(Spin.INSTANCE, () -> {
            CompletionQueue fired;
            try {
              fired = channel.awaitEvent(blockTimeout);
            } catch (RuntimeException e) {
              log.warn("{}: waiting for completion events failed: {}", context.device().name(),
                  e.getMessage());
              return Behaviors.same();
            }
            // every event waiting now, each acknowledged at once and its owner woken
            try {
              while (fired != null) {
                deliver(fired);
                fired = channel.awaitEvent(Duration.ZERO);
              }
            } catch (RuntimeException e) {
              // the poller must outlive one bad event: its connections depend on it
              log.error("{}: delivering a completion event failed", context.device().name(), e);
            }
            ctx.getSelf().tell(Spin.INSTANCE);
            return Behaviors.same();
          })
          .onMessage(CloseCq.class, c -> {
            try {
              drain();
            } catch (RuntimeException e) {
              log.error("{}: delivering a completion event failed", context.device().name(), e);
            }
            closeCq(c.cq(), closing);
            return Behaviors.same();
          })
          .onMessageEquals(Stop.INSTANCE, Behaviors::stopped)
          .onSignal(PostStop.class, s -> {
            close(ctx);
            return Behaviors.same();
          })
          .build();
    });
  }

  private void deliver(CompletionQueue cq) {
    channel.ackEvents(cq, 1);
    Runnable wake = wakers.get(cq);
    if (wake != null) wake.run();
  }

  private void drain() {
    CompletionQueue fired;
    while ((fired = channel.awaitEvent(Duration.ZERO)) != null) deliver(fired);
  }

  private void closeCq(CompletionQueue cq, Set<CompletionQueue> from) {
    if (!from.remove(cq)) return;
    try {
      cq.close();
    } catch (RuntimeException e) {
      log.error("{}: closing a CQ failed: {}", context.device().name(), e.getMessage());
    }
  }

  /** After the last connection: CQs left behind (none, normally), then the channel. */
  private void close(ActorContext<Command> ctx) {
    synchronized (closing) {
      closed = true;
    }
    try {
      drain();
      // a CloseCq the stop overtook, and CQs whose owners never gave them up (none, normally)
      for (CompletionQueue cq : new ArrayList<>(closing)) closeCq(cq, closing);
      for (CompletionQueue cq : new ArrayList<>(wakers.keySet())) closeCq(cq, wakers.keySet());
      channel.close();
    } catch (RuntimeException e) {
      log.error("{}: closing the completion channel failed: {}", context.device().name(),
          e.getMessage());
    }
  }
}
