package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.DeviceContext;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/** The completion hubs, one per device context in use, counted by their users. */
@InternalApi
public final class CompletionHubs {
  private final RdmaRuntime runtime;
  private final Map<DeviceContext, CompletionHub> hubs = new IdentityHashMap<>();

  public CompletionHubs(RdmaRuntime runtime) {
    this.runtime = runtime;
  }

  /** The context's hub, made by its first user. */
  public synchronized CompletionHub acquire(DeviceContext context) {
    CompletionHub hub = hubs.get(context);
    if (hub == null) {
      hub = new CompletionHub(runtime, context);
      hubs.put(context, hub);
    }
    hub.references++;
    return hub;
  }

  /**
   * After the user gave back its CQs: the last one out stops the hub. Completes when the hub's
   * channel is closed (at once for any other user), after which the context may close.
   */
  public CompletionStage<Done> release(CompletionHub hub) {
    synchronized (this) {
      if (--hub.references > 0) return CompletableFuture.completedFuture(Done.getInstance());
      hubs.remove(hub.context, hub);
    }
    return hub.stop();
  }

  /** Hubs with a thread of their own. */
  public synchronized int withThreads() {
    return (int) hubs.values().stream().filter(CompletionHub::hasThread).count();
  }

  /** Live hubs, for tests. */
  public synchronized int size() {
    return hubs.size();
  }
}
