package dev.pekkordma.actors;

import dev.pekkordma.actors.DeviceSession.CqEntry;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Polls every CQ of a device session and hands completions to each CQ's owner in batches. Runs
 * on the pinned poller dispatcher: while there is work it polls without pause; after an empty
 * poll it follows a {@link BackoffIdleStrategy}, and at its end arms the CQs and blocks on the
 * completion channel. Each round is one message to itself, so a stop or a Close is never more
 * than one block-timeout away. It is also the one that closes CQs, since it is the one that
 * polls them and holds their channel events.
 */
final class CqPoller {
  interface Command {}

  // the poller's own messages may reach it after it stopped (with its CQs): no news
  private enum Spin implements Command, DeadLetterSuppression { INSTANCE }

  /** Close the entry's CQ; its QP is destroyed. */
  record Close(CqEntry entry) implements Command, DeadLetterSuppression {}

  private final ActorContext<Command> ctx;
  private final DeviceSession session;
  private final WorkCompletions wcs;
  private final BackoffIdleStrategy idle;
  private final Duration blockTimeout;
  private final int batchesPerCq = 4;
  private boolean armed;

  private CqPoller(ActorContext<Command> ctx, DeviceSession session) {
    this.ctx = ctx;
    this.session = session;
    RdmaActorsSettings s = session.settings;
    this.wcs = new WorkCompletions(s.batchSize);
    this.idle = new BackoffIdleStrategy(s.maxSpins, s.maxYields);
    this.blockTimeout = s.blockTimeout;
  }

  static Behavior<Command> create(DeviceSession session) {
    return Behaviors.setup(ctx -> {
      CqPoller p = new CqPoller(ctx, session);
      ctx.getSelf().tell(Spin.INSTANCE);
      return p.behavior();
    });
  }

  private Behavior<Command> behavior() {
    return Behaviors.receive(Command.class)
        .onMessageEquals(Spin.INSTANCE, this::spin)
        .onMessage(Close.class, this::close)
        .onSignal(PostStop.class, s -> {
          wcs.close();
          return Behaviors.same();
        })
        .build();
  }

  private Behavior<Command> spin() {
    if (pollAll() > 0) {
      worked();
    } else if (idle.idle() == BackoffIdleStrategy.Step.BLOCK) {
      block();
    }
    ctx.getSelf().tell(Spin.INSTANCE);
    return Behaviors.same();
  }

  private void block() {
    if (!armed) {
      for (CqEntry e : session.cqs.values()) {
        if (e.closing || e.failed) continue;
        try {
          e.cq.requestNotify(false);
        } catch (RuntimeException ex) {
          fail(e, ex);
        }
      }
      armed = true;
      // a completion that came between the last poll and the arming raised no event
      if (pollAll() > 0) {
        worked();
        return;
      }
    }
    CompletionQueue fired = session.channel.awaitEvent(blockTimeout);
    if (fired != null) {
      session.channel.ackEvents(fired, 1);
      session.drainChannel();
      worked();
    }
  }

  private void worked() {
    idle.reset();
    armed = false;
  }

  private int pollAll() {
    int total = 0;
    for (CqEntry e : session.cqs.values()) {
      if (e.closing || e.failed) continue;
      for (int round = 0; round < batchesPerCq; round++) {
        int n;
        try {
          n = e.cq.poll(wcs);
        } catch (RuntimeException ex) {
          fail(e, ex);
          break;
        }
        if (n == 0) break;
        total += n;
        e.owner.tell(new QpActor.Completions(e, CompletionBatch.copyOf(wcs, n)));
        if (n < wcs.capacity()) break;
      }
    }
    return total;
  }

  private void fail(CqEntry e, RuntimeException ex) {
    e.failed = true;
    e.owner.tell(new QpActor.CqFailed(e, ex.getMessage()));
  }

  private Behavior<Command> close(Close c) {
    CqEntry e = c.entry();
    try {
      // its events must be acknowledged before it can be destroyed; other CQs whose events
      // went with them are not armed any more
      if (session.drainChannel() > 0) armed = false;
      e.cq.close();
    } catch (RuntimeException ex) {
      ctx.getLog().error("{}: closing a CQ failed: {}", session.name, ex.getMessage());
    }
    session.cqs.remove(e.cq);
    return Behaviors.same();
  }
}
