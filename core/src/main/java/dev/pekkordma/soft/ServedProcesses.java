package dev.pekkordma.soft;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The processes this fabric serves: one connection each (a process opens one link to another,
 * so a newer connection of the same process replaces its older one), each read by a thread of
 * its own, at most {@code max-connections} of them. Only proven connections get here: a peer
 * that has proven nothing can never hold one of these places.
 */
final class ServedProcesses {
  private final TcpFabric fabric;
  private final Map<FabricAddress, InboundConnection> byProcess = new HashMap<>();
  private final ThreadPoolExecutor threads;

  ServedProcesses(TcpFabric fabric) {
    this.fabric = fabric;
    AtomicInteger n = new AtomicInteger();
    this.threads = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, "soft-rdma-fabric-in-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  /** Whether {@code process} would get a place: it has one, or one is free. */
  synchronized boolean hasRoomFor(FabricAddress process) {
    return byProcess.containsKey(process) || byProcess.size() < fabric.limits().maxConnections();
  }

  /** Gives {@code c} its process's place, replacing an older connection; false if none is free. */
  boolean admit(FabricAddress process, InboundConnection c) {
    InboundConnection older;
    synchronized (this) {
      if (!hasRoomFor(process)) return false;
      older = byProcess.put(process, c);
    }
    if (older != null) older.replaced();
    return true;
  }

  /** Starts reading {@code c}'s requests on a thread of its own. */
  void start(InboundConnection c) {
    try {
      threads.execute(c);
    } catch (RejectedExecutionException e) { // shut down: the JVM is ending
      c.replaced();
    }
  }

  /** {@code c} ended: its place is free (unless a newer connection took it already). */
  synchronized void ended(FabricAddress process, InboundConnection c) {
    byProcess.remove(process, c);
  }

  /** Closes the connections idle at {@code now} ({@link InboundConnection#reclaimIfIdle}). */
  void reclaimIdle(long now) {
    InboundConnection[] all;
    synchronized (this) {
      all = byProcess.values().toArray(new InboundConnection[0]);
    }
    for (InboundConnection c : all) c.reclaimIfIdle(now);
  }

  synchronized int size() {
    return byProcess.size();
  }
}
