package dev.pekkordma.streams.impl;

import dev.pekkordma.actors.BackoffIdleStrategy;
import dev.pekkordma.actors.RdmaActorsSettings;
import dev.pekkordma.streams.WorkCompletion;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.WorkCompletions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.BoundedSourceQueue;

/**
 * Feeds one CQ's completions into a completion source's bounded queue, on the pinned poller
 * dispatcher: polls while there are completions and room in the queue, then backs off (spin,
 * yield, then block on the CQ's channel, or park a millisecond when it has none). It polls no
 * more than the queue has room for, so a slow consumer leaves completions in the CQ: size the
 * CQ for what the producer posts. Stops when the source is cancelled, or the CQ fails.
 */
final class CompletionPoller {
  private CompletionPoller() {}

  private enum Spin { INSTANCE }

  static Behavior<Spin> create(CompletionQueue cq, BoundedSourceQueue<WorkCompletion> queue,
      int capacity, AtomicBoolean cancelled, CompletableFuture<Done> stopped,
      RdmaActorsSettings settings) {
    return Behaviors.setup(ctx -> {
      int batch = Math.min(capacity, settings.batchSize);
      WorkCompletions wcs = new WorkCompletions(batch);
      BackoffIdleStrategy idle = new BackoffIdleStrategy(settings.maxSpins, settings.maxYields);
      CompletionChannel channel = cq.channel();
      boolean[] armed = {false};
      ctx.getSelf().tell(Spin.INSTANCE);
      return Behaviors.receive(Spin.class)
          .onMessageEquals(Spin.INSTANCE, () -> {
            if (cancelled.get()) return Behaviors.stopped();
            int n = 0;
            if (capacity - queue.size() >= batch) {
              try {
                n = cq.poll(wcs);
              } catch (RuntimeException e) {
                queue.fail(e);
                return Behaviors.stopped();
              }
              for (int i = 0; i < n; i++) queue.offer(WorkCompletion.of(wcs, i));
            }
            if (n > 0) {
              idle.reset();
              armed[0] = false;
            } else if (idle.idle() == BackoffIdleStrategy.Step.BLOCK) {
              if (channel == null || capacity - queue.size() < batch) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
              } else if (!armed[0]) {
                cq.requestNotify(false);
                armed[0] = true; // polled once more on the next round
              } else {
                CompletionQueue fired = channel.awaitEvent(settings.blockTimeout);
                if (fired != null) {
                  channel.ackEvents(fired, 1);
                  armed[0] = false;
                  idle.reset();
                }
              }
            }
            ctx.getSelf().tell(Spin.INSTANCE);
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            wcs.close();
            try {
              queue.complete();
            } catch (IllegalStateException alreadyCompleted) {
              // cancelled downstream, or failed above
            }
            stopped.complete(Done.getInstance());
            return Behaviors.same();
          })
          .build();
    });
  }
}
