package dev.pekkordma.soft;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.RdmaException;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

final class SoftCompletionChannel extends Closeable implements CompletionChannel {
  private static final Logger log = LoggerFactory.getLogger(SoftCompletionChannel.class);
  final SoftContext context;
  private final LinkedBlockingQueue<SoftCq> events = new LinkedBlockingQueue<>();
  final AtomicInteger cqs = new AtomicInteger();

  SoftCompletionChannel(SoftContext context) {
    this.context = context;
  }

  @Override
  public String describe() {
    return "completion channel of " + context.device.info.name();
  }

  private volatile Consumer<CompletionQueue> direct;

  void signal(SoftCq cq) {
    Consumer<CompletionQueue> d = direct;
    if (d == null) {
      events.add(cq);
      return;
    }
    try {
      d.accept(cq);
    } catch (RuntimeException e) {
      // the handler's failure must not fail the request that raised the event
      log.error("soft-rdma: {}: an event handler failed", describe(), e);
    }
  }

  @Override
  public boolean deliverTo(Consumer<CompletionQueue> handler) {
    checkOpen("deliverTo");
    direct = handler;
    SoftCq cq;
    while ((cq = events.poll()) != null) handler.accept(cq); // never read, so never unacked
    return true;
  }

  /** A destroyed CQ's unread events go with it (the kernel discards them too). */
  void discard(SoftCq cq) {
    events.removeIf(e -> e == cq);
  }

  @Override
  public CompletionQueue awaitEvent(Duration timeout) {
    checkOpen("ibv_get_cq_event");
    try {
      SoftCq cq = events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
      // an event counts as reported when it is read, as the kernel counts it
      if (cq != null) cq.unackedEvents.incrementAndGet();
      return cq;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  @Override
  public void ackEvents(CompletionQueue cq, int count) {
    if (!(cq instanceof SoftCq) || count < 0) {
      throw new RdmaException("ibv_ack_cq_events", RdmaException.EINVAL,
          "needs a CQ of this provider and a count >= 0, got " + cq + ", " + count);
    }
    SoftCq c = (SoftCq) cq;
    int left = c.unackedEvents.addAndGet(-count);
    if (left < 0) {
      c.unackedEvents.addAndGet(count);
      throw new RdmaException("ibv_ack_cq_events", RdmaException.EINVAL,
          "acknowledging " + count + " events but only " + (left + count) + " are unacknowledged");
    }
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    if (cqs.get() > 0) {
      reopen();
      throw new RdmaException("ibv_destroy_comp_channel", RdmaException.EBUSY,
          describe() + " is still used by " + cqs.get() + " CQs");
    }
    context.forget(this);
  }
}
