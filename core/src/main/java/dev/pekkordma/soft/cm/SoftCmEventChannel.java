package dev.pekkordma.soft.cm;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.verbs.RdmaException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The software provider's {@code rdma_event_channel}: a queue of events for the ids created on
 * it, and one timer thread for their deadlines and short asynchronous steps.
 */
@InternalApi
public final class SoftCmEventChannel implements CmEventChannel {
  private static final AtomicInteger CHANNELS = new AtomicInteger();

  final SoftCmSupport support;
  private final LinkedBlockingQueue<CmEvent> events = new LinkedBlockingQueue<>();
  private final Set<SoftChannelId> ids = new LinkedHashSet<>(); // guarded by this
  private final ScheduledThreadPoolExecutor timer;
  private boolean closed; // guarded by this
  private volatile Runnable posted;

  public SoftCmEventChannel(SoftCmSupport support) {
    this.support = Objects.requireNonNull(support, "support");
    String name = "soft-cm-channel-" + CHANNELS.incrementAndGet();
    timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true);
    timer.prestartCoreThread(); // every id's first step schedules a deadline: not its cost
  }

  @Override
  public CmId createId(Object context, RdmaPortSpace space) {
    if (space == RdmaPortSpace.UDP) return newUdpId(context, "rdma_create_id");
    if (space != RdmaPortSpace.TCP) {
      throw new RdmaException("rdma_create_id", RdmaException.EPROTONOSUPPORT,
          "the software provider's CM serves RDMA_PS_TCP and RDMA_PS_UDP ids, not RDMA_PS_"
          + space + (space == RdmaPortSpace.IB ? " (AF_IB addressing is InfiniBand's)"
              : " (IPoIB's groups and Q_Keys come from an InfiniBand subnet manager)"));
    }
    return newId(context, "rdma_create_id");
  }

  /** A new RDMA_PS_UDP id: for the application, or a SIDR request's. */
  SoftUdpCmId newUdpId(Object context, String verb) {
    SoftUdpCmId id;
    synchronized (this) {
      if (closed) throw new RdmaException(verb, RdmaException.EINVAL, "the event channel is closed");
      id = new SoftUdpCmId(this, context);
      ids.add(id);
    }
    support.countCmId(1);
    return id;
  }

  SoftCmId newId(Object context, String verb) {
    SoftCmId id;
    synchronized (this) {
      if (closed) throw new RdmaException(verb, RdmaException.EINVAL, "the event channel is closed");
      id = new SoftCmId(this, context);
      ids.add(id);
    }
    support.countCmId(1);
    return id;
  }

  @Override
  public CmEvent awaitEvent(Duration timeout) {
    if (timeout == null) {
      throw new RdmaException("rdma_get_cm_event", RdmaException.EINVAL, "timeout is null");
    }
    synchronized (this) {
      if (closed) {
        throw new RdmaException("rdma_get_cm_event", RdmaException.EINVAL,
            "the event channel is closed");
      }
    }
    try {
      long nanos = timeout.isNegative() ? 0 : timeout.toNanos();
      return events.poll(nanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  @Override
  public void close() {
    List<SoftChannelId> alive;
    synchronized (this) {
      if (closed) return;
      alive = new ArrayList<>(ids);
      closed = alive.isEmpty();
    }
    if (!alive.isEmpty()) { // described outside the lock: an id's monitor may wait for ours
      throw new RdmaException("rdma_destroy_event_channel", RdmaException.EBUSY,
          alive.size() + " CM id(s) still alive on the channel: " + alive);
    }
    timer.shutdownNow();
    events.clear();
  }

  public synchronized boolean isClosed() {
    return closed;
  }

  /** The provider is closing: destroy every id (and its QP) as if the process ended. */
  public void shutdown() {
    List<SoftChannelId> alive;
    synchronized (this) {
      alive = new ArrayList<>(ids);
    }
    for (SoftChannelId id : alive) id.destroyForShutdown();
    try {
      close();
    } catch (RdmaException e) {
      // an id created meanwhile: the provider is going away regardless
    }
  }

  @Override
  public boolean notifyOnPost(Runnable posted) {
    this.posted = Objects.requireNonNull(posted, "posted");
    return true;
  }

  void post(CmEvent event) {
    events.add(event);
    Runnable p = posted;
    if (p != null) p.run();
  }

  /** Deadlines and steps waiting in the timer, as a measure of what the channel holds. */
  int scheduled() {
    return timer.getQueue().size();
  }

  /**
   * Runs {@code task} on the channel's thread after {@code delay}; dropped once it is closed
   * (then null is returned).
   */
  ScheduledFuture<?> schedule(Runnable task, Duration delay) {
    try {
      return timer.schedule(task, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the channel closed, so every id on it is gone and the task has nobody to report to
      return null;
    }
  }

  /**
   * Forgets a destroyed id: its undelivered events go (rdma_destroy_id discards them too), and
   * for a listener, the connection requests nobody has seen yet are returned for destroying.
   */
  List<CmId> forget(SoftChannelId id) {
    synchronized (this) {
      ids.remove(id);
    }
    List<CmId> orphans = new ArrayList<>();
    events.removeIf(e -> {
      if (e.id() == id) return true;
      if (e.type() == CmEventType.CONNECT_REQUEST && e.listenId() == id) {
        orphans.add(e.id());
        return true;
      }
      return false;
    });
    return orphans;
  }

  @Override
  public String toString() {
    return "SoftCmEventChannel" + "(" + events.size() + " events queued)";
  }
}
