package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.RuntimeSettings;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the owners of CQs on one device context share: a completion channel, and an agent that
 * serves it. A CQ made with {@link #createCq(int, Runnable)} is woken: when it fires the hub runs
 * its owner's callback, and the owner polls and arms it on its own thread (a stream stage). A CQ
 * made with {@link #createPolledCq} is polled: the hub polls it, hands each batch to its handler,
 * and arms it before blocking (an actor's).
 *
 * <p>A channel that hands events over directly ({@link CompletionChannel#deliverTo}: the software
 * provider's) wakes owners from the thread that raised the event; then the hub needs a thread of
 * its own only once it has polled CQs. The hub is the one that closes CQs, since it holds their
 * channel events, and at its end the channel. Reference-counted by {@link CompletionHubs}.
 */
@InternalApi
public final class CompletionHub implements Agent {
  private static final Logger log = LoggerFactory.getLogger(CompletionHub.class);
  private static final int BATCHES_PER_CQ = 4;

  final DeviceContext context;
  private final CompletionChannel channel;
  private final boolean direct;
  private final RdmaRuntime runtime;
  private final Map<CompletionQueue, Runnable> wakers = new ConcurrentHashMap<>();
  private final Map<CompletionQueue, Polled> polled = new ConcurrentHashMap<>();
  /** Direct events of polled CQs, for the hub's thread. */
  private final BlockingQueue<CompletionQueue> handedOver = new LinkedBlockingQueue<>();
  private final Queue<CompletionQueue> toClose = new ConcurrentLinkedQueue<>();
  private final WorkCompletions wcs;
  private AgentRunner runner; // guarded by this
  private boolean closed; // guarded by this: the runner has stopped
  private boolean released; // guarded by this: the last user has let go
  private boolean channelClosed; // guarded by this
  private boolean armed; // hub thread only
  private final boolean spinning; // busy-spin: read the channel every round, never block
  int references; // guarded by CompletionHubs

  private static final class Polled {
    final CompletionQueue cq;
    final CompletionHandler handler;
    volatile boolean failed;

    Polled(CompletionQueue cq, CompletionHandler handler) {
      this.cq = cq;
      this.handler = handler;
    }
  }

  CompletionHub(RdmaRuntime runtime, DeviceContext context) {
    this.runtime = runtime;
    this.context = context;
    this.channel = context.createCompletionChannel();
    this.wcs = new WorkCompletions(runtime.settings().batchSize);
    this.direct = channel.deliverTo(this::handOver);
    this.spinning = runtime.settings().idle == RuntimeSettings.Idle.BUSY_SPIN;
    if (!direct) startRunner();
  }

  @Override
  public String roleName() {
    return "completion hub of " + context.device().name();
  }

  /** A CQ on the hub's channel whose events run {@code wake}; polled and armed by its owner. */
  public CompletionQueue createCq(int entries, Runnable wake) {
    CompletionQueue cq = context.createCq(entries, channel);
    wakers.put(cq, wake);
    return cq;
  }

  /** A CQ the hub polls, handing each batch to {@code handler}; armed at once. */
  public CompletionQueue createPolledCq(int entries, CompletionHandler handler) {
    CompletionQueue cq = context.createCq(entries, channel);
    try {
      cq.requestNotify(false);
    } catch (RuntimeException e) {
      cq.close();
      throw e;
    }
    polled.put(cq, new Polled(cq, handler));
    startRunner();
    return cq;
  }

  /** The owner is done with the CQ (its QP is destroyed): the hub closes it. */
  public void closeCq(CompletionQueue cq) {
    wakers.remove(cq);
    Polled p = polled.get(cq);
    if (p != null) p.failed = true; // polled no more
    synchronized (this) {
      if (runner != null && !closed) {
        toClose.add(cq);
        return;
      }
    }
    // no thread serves the hub (any more): its events must be acknowledged here
    polled.remove(cq);
    acknowledgePending();
    closeQuietly(cq);
  }

  private synchronized void startRunner() {
    if (runner != null || closed) return;
    runner = AgentRunner.start(runtime.system(), runtime.uniqueName("pekko-rdma-completions"),
        idleStrategy(), this);
  }

  /**
   * The configured strategy, except that a hub with no CQ to poll blocks on its channel at
   * once: it only waits for events, which its channel's wake brings as soon as a spin would.
   */
  private IdleStrategy idleStrategy() {
    IdleStrategy configured = runtime.settings().newIdleStrategy();
    if (spinning) return configured;
    Duration block = runtime.settings().blockTimeout;
    return (work, agent) -> {
      if (work == 0 && polled.isEmpty()) {
        agent.awaitWork(block);
      } else {
        configured.idle(work, agent);
      }
    };
  }

  /** An event handed over directly: in the provider's thread, so only a wake or a note. */
  private void handOver(CompletionQueue cq) {
    Runnable wake = wakers.get(cq);
    if (wake != null) {
      try {
        wake.run();
      } catch (RuntimeException e) {
        log.error("{}: delivering a completion event failed", context.device().name(), e);
      }
    } else if (polled.containsKey(cq)) {
      handedOver.add(cq);
    }
  }

  @Override
  public int doWork() {
    int work = closeRequested();
    if (spinning) work += drainEvents();
    return work + pollAll();
  }

  @Override
  public void awaitWork(Duration timeout) {
    if (!armed) {
      for (Polled p : polled.values()) {
        if (p.failed) continue;
        try {
          p.cq.requestNotify(false);
        } catch (RuntimeException e) {
          fail(p, e);
        }
      }
      armed = true;
      // a completion that came between the last poll and the arming raised no event
      if (pollAll() > 0) return;
    }
    CompletionQueue fired = null;
    try {
      fired = direct ? handedOver.poll(timeout.toNanos(), TimeUnit.NANOSECONDS)
          : channel.awaitEvent(timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // every event waiting now, each acknowledged at once: an unacknowledged one would keep
    // its CQ from closing
    if (fired != null) {
      deliver(fired);
      drainEvents();
    }
  }

  private void deliver(CompletionQueue cq) {
    if (!direct) channel.ackEvents(cq, 1);
    armed = false; // the CQ that fired is disarmed; the others are armed again with it
    Runnable wake = wakers.get(cq);
    if (wake != null) wake.run();
  }

  private int drainEvents() {
    int n = 0;
    CompletionQueue cq;
    while ((cq = direct ? handedOver.poll() : channel.awaitEvent(Duration.ZERO)) != null) {
      deliver(cq);
      n++;
    }
    return n;
  }

  private int pollAll() {
    int total = 0;
    for (Polled p : polled.values()) {
      if (p.failed) continue;
      for (int round = 0; round < BATCHES_PER_CQ; round++) {
        int n;
        try {
          n = p.cq.poll(wcs);
        } catch (RuntimeException e) {
          fail(p, e);
          break;
        }
        if (n == 0) break;
        total += n;
        p.handler.completions(wcs, n);
        if (n < wcs.capacity()) break;
      }
    }
    if (total > 0) armed = false;
    return total;
  }

  private void fail(Polled p, RuntimeException e) {
    p.failed = true;
    p.handler.failed(e);
  }

  private int closeRequested() {
    if (toClose.isEmpty()) return 0;
    // a CQ's events must be acknowledged before it can be destroyed
    drainEvents();
    int n = 0;
    CompletionQueue cq;
    while ((cq = toClose.poll()) != null) {
      polled.remove(cq);
      closeQuietly(cq);
      n++;
    }
    return n;
  }

  private void closeQuietly(CompletionQueue cq) {
    try {
      cq.close();
    } catch (RuntimeException e) {
      log.error("{}: closing a CQ failed: {}", context.device().name(), e.getMessage());
    }
  }

  /**
   * The runner stopped: the CQs whose closes it had not reached yet go now; the rest and the
   * channel go too if the last user has let go, else with that user's release (the system's
   * end can stop the runner before the owners of its CQs).
   */
  @Override
  public void onClose() {
    boolean last;
    synchronized (this) {
      closed = true;
      last = released;
    }
    acknowledgePending();
    CompletionQueue cq;
    while ((cq = toClose.poll()) != null) closeQuietly(cq);
    if (last) closeAll();
  }

  /** Acknowledges the events waiting, without waking anyone: their CQs are closing. */
  private void acknowledgePending() {
    if (direct) return; // handed over already acknowledged
    try {
      CompletionQueue fired;
      while ((fired = channel.awaitEvent(Duration.ZERO)) != null) channel.ackEvents(fired, 1);
    } catch (RuntimeException e) {
      log.warn("{}: draining the completion channel failed: {}", context.device().name(),
          e.getMessage());
    }
  }

  private synchronized void closeAll() {
    if (channelClosed) return;
    channelClosed = true;
    acknowledgePending();
    CompletionQueue cq;
    while ((cq = toClose.poll()) != null) closeQuietly(cq);
    for (CompletionQueue left : new ArrayList<>(wakers.keySet())) closeQuietly(left);
    for (CompletionQueue left : new ArrayList<>(polled.keySet())) closeQuietly(left);
    wakers.clear();
    polled.clear();
    wcs.close();
    try {
      channel.close();
    } catch (RuntimeException e) {
      log.error("{}: closing the completion channel failed: {}", context.device().name(),
          e.getMessage());
    }
  }

  /** After the last user: completes once the CQs left and the channel are closed. */
  CompletionStage<Done> stop() {
    AgentRunner r;
    boolean here;
    synchronized (this) {
      released = true;
      r = runner;
      here = r == null || closed;
      if (r == null) closed = true;
    }
    if (!here) return r.stop(); // its onClose closes them
    closeAll();
    return CompletableFuture.completedFuture(Done.getInstance());
  }

  /** For tests: whether the hub has a thread of its own. */
  public synchronized boolean hasThread() {
    return runner != null;
  }
}
