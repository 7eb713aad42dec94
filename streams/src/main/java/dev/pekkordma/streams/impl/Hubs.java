package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.DeviceContext;
import java.time.Duration;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorSystem;

/** The device hubs, one per device context the CM hands out, counted by their connections. */
public final class Hubs {
  private final ActorSystem<?> system;
  private final String dispatcher;
  private final Duration blockTimeout;
  private final Map<DeviceContext, DeviceHub> hubs = new IdentityHashMap<>();
  private int made;

  Hubs(ActorSystem<?> system, String dispatcher, Duration blockTimeout) {
    this.system = system;
    this.dispatcher = dispatcher;
    this.blockTimeout = blockTimeout;
  }

  public synchronized DeviceHub acquire(DeviceContext context) {
    DeviceHub hub = hubs.get(context);
    if (hub == null) {
      hub = new DeviceHub(system, context, dispatcher, blockTimeout,
          "pekko-rdma-streams-poller-" + (++made));
      hubs.put(context, hub);
    }
    hub.references++;
    return hub;
  }

  /** After the connection gave back its CQ: the last one out stops the hub. */
  public synchronized void release(DeviceHub hub) {
    if (--hub.references > 0) return;
    hubs.remove(hub.context, hub);
    hub.stop();
  }

  /** Live hubs, for tests. */
  public synchronized int size() {
    return hubs.size();
  }
}
