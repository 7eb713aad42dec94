package dev.pekkordma.soft;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The deadlines of proven connections, kept by a timer rather than by read timeouts: every tick
 * it closes a connection whose frame piece is overdue ({@link FabricConnection#expireOverdue})
 * and lets the served processes give back the places of idle ones. Its tick is an eighth of the
 * shorter of the frame and idle timeouts (between 10 ms and a second), so a deadline is kept to
 * within that.
 */
final class ConnectionWatch {
  private static final long MIN_TICK = TimeUnit.MILLISECONDS.toNanos(10);
  private static final long MAX_TICK = TimeUnit.SECONDS.toNanos(1);

  private final TcpFabric fabric;
  private final ScheduledExecutorService timers;
  private final Set<FabricConnection> connections = ConcurrentHashMap.newKeySet();

  ConnectionWatch(TcpFabric fabric, ScheduledExecutorService timers) {
    this.fabric = fabric;
    this.timers = timers;
  }

  void start() {
    schedule();
  }

  void watch(FabricConnection c) {
    connections.add(c);
  }

  void forget(FabricConnection c) {
    connections.remove(c);
  }

  private void tick() {
    try {
      long now = System.nanoTime();
      for (FabricConnection c : connections) c.expireOverdue(now);
      fabric.served().reclaimIdle(now);
    } finally {
      schedule();
    }
  }

  private void schedule() {
    FabricLimits l = fabric.limits();
    long tick = Math.min(l.frame().toNanos(), l.idle().toNanos()) / 8;
    timers.schedule(this::tick, Math.max(MIN_TICK, Math.min(MAX_TICK, tick)),
        TimeUnit.NANOSECONDS);
  }
}
