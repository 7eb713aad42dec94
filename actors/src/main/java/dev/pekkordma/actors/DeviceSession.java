package dev.pekkordma.actors;

import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.CompletionHandler;
import dev.pekkordma.runtime.internal.CompletionHub;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;

/**
 * One open device context and what the actors of that device share: the context's completion
 * hub, which polls their CQs, and who owns each QP and CQ, so async events and completions reach
 * their owners. The maps are written when a QP or CQ is made, before anything can happen on it,
 * hence concurrent maps and not messages.
 */
final class DeviceSession {
  final String name;
  final DeviceContext context;
  final RdmaActorsSettings settings;
  final ActorRef<DeviceActor.Command> device;
  private final RdmaRuntime runtime;
  private final CompletionHub hub;
  private final Map<Integer, ActorRef<QpActor.Command>> qpOwners = new ConcurrentHashMap<>();
  final Map<CompletionQueue, CqEntry> cqs = new ConcurrentHashMap<>();

  /** A CQ and its owner; the hub hands its completions to the owner in batches. */
  static final class CqEntry implements CompletionHandler {
    volatile CompletionQueue cq;
    final ActorRef<QpActor.Command> owner;

    CqEntry(ActorRef<QpActor.Command> owner) {
      this.owner = owner;
    }

    @Override
    public void completions(WorkCompletions wcs, int n) {
      owner.tell(new QpActor.Completions(this, CompletionBatch.copyOf(wcs, n)));
    }

    @Override
    public void failed(RuntimeException cause) {
      owner.tell(new QpActor.CqFailed(this, cause.getMessage()));
    }
  }

  DeviceSession(String name, DeviceContext context, RdmaActorsSettings settings,
      ActorRef<DeviceActor.Command> device, RdmaRuntime runtime) {
    this.name = name;
    this.context = context;
    this.settings = settings;
    this.device = device;
    this.runtime = runtime;
    this.hub = runtime.hubs().acquire(context);
  }

  /** The runtime's budget of registered memory, which pools and registrations reserve from. */
  MemoryBudget memory() {
    return runtime.memory();
  }

  /** A CQ the hub polls for {@code owner}, armed at once. */
  CqEntry createCq(int size, ActorRef<QpActor.Command> owner) {
    CqEntry e = new CqEntry(owner);
    e.cq = hub.createPolledCq(size, e);
    cqs.put(e.cq, e);
    return e;
  }

  /** The owner is done with the CQ (its QP is destroyed): the hub closes it. */
  void releaseCq(CqEntry e) {
    cqs.remove(e.cq);
    hub.closeCq(e.cq);
  }

  void registerQp(int qpNum, ActorRef<QpActor.Command> owner) {
    qpOwners.put(qpNum, owner);
  }

  void unregisterQp(int qpNum) {
    qpOwners.remove(qpNum);
  }

  ActorRef<QpActor.Command> qpOwner(int qpNum) {
    return qpOwners.get(qpNum);
  }

  /**
   * Gives the hub back, once the device's child actors have stopped; when this was its last user
   * it closes the CQs left and the channel, which is waited for, since the context goes next.
   */
  void close(Logger log) {
    Duration wait = runtime.settings().blockTimeout.multipliedBy(2).plusSeconds(1);
    try {
      runtime.hubs().release(hub).toCompletableFuture()
          .get(wait.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      log.error("{}: the completion hub did not close within {}", name, wait);
    } catch (ExecutionException e) {
      log.error("{}: closing the completion hub failed: {}", name, e.getCause().getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    cqs.clear();
  }
}
