package dev.pekkordma.streams.impl;

import dev.pekkordma.runtime.internal.Agent;
import dev.pekkordma.streams.WorkCompletion;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.Done;
import org.apache.pekko.stream.BoundedSourceQueue;

/**
 * Feeds one CQ's completions into a completion source's bounded queue: polls while there are
 * completions and room in the queue; when idle, blocks on the CQ's channel, or parks a
 * millisecond when it has none or the queue is full. It polls no more than the queue has room
 * for, so a slow consumer leaves completions in the CQ: size the CQ for what the producer posts.
 * Ends when the source is cancelled, or the CQ fails.
 */
final class CompletionFeed implements Agent {
  private static final long PARK = TimeUnit.MILLISECONDS.toNanos(1);
  private final CompletionQueue cq;
  private final CompletionChannel channel;
  private final BoundedSourceQueue<WorkCompletion> queue;
  private final int capacity;
  private final int batch;
  private final AtomicBoolean cancelled;
  private final CompletableFuture<Done> stopped;
  private final WorkCompletions wcs;
  private boolean armed;

  CompletionFeed(CompletionQueue cq, BoundedSourceQueue<WorkCompletion> queue, int capacity,
      int batchSize, AtomicBoolean cancelled, CompletableFuture<Done> stopped) {
    this.cq = cq;
    this.channel = cq.channel();
    this.queue = queue;
    this.capacity = capacity;
    this.batch = Math.min(capacity, batchSize);
    this.cancelled = cancelled;
    this.stopped = stopped;
    this.wcs = new WorkCompletions(batch);
  }

  @Override
  public String roleName() {
    return "completion source of " + cq;
  }

  private boolean hasRoom() {
    return capacity - queue.size() >= batch;
  }

  @Override
  public int doWork() {
    if (cancelled.get()) throw new Terminated("the completion source was cancelled");
    if (!hasRoom()) return 0;
    int n;
    try {
      n = cq.poll(wcs);
    } catch (RuntimeException e) {
      queue.fail(e);
      throw new Terminated("polling failed: " + e.getMessage());
    }
    for (int i = 0; i < n; i++) queue.offer(WorkCompletion.of(wcs, i));
    if (n > 0) armed = false;
    return n;
  }

  @Override
  public void awaitWork(Duration timeout) {
    if (channel == null || !hasRoom()) {
      LockSupport.parkNanos(PARK);
    } else if (!armed) {
      cq.requestNotify(false);
      armed = true; // polled once more in the next round before blocking
    } else {
      CompletionQueue fired = channel.awaitEvent(timeout);
      if (fired != null) {
        channel.ackEvents(fired, 1);
        armed = false;
      }
    }
  }

  @Override
  public void onClose() {
    wcs.close();
    try {
      queue.complete();
    } catch (IllegalStateException alreadyCompleted) {
      // cancelled downstream, or failed above
    }
    stopped.complete(Done.getInstance());
  }
}
