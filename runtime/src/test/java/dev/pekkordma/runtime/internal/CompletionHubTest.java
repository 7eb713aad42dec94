package dev.pekkordma.runtime.internal;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.WorkCompletions;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A context's hub: shared by its users, and closed by the last of them, whatever stopped first. */
class CompletionHubTest {
  private static final CompletionHandler IGNORE = new CompletionHandler() {
    @Override
    public void completions(WorkCompletions wcs, int n) {}

    @Override
    public void failed(RuntimeException cause) {}
  };

  @Test
  void usersOfOneContextShareItsHubAndTheLastOneOutClosesIt() throws Exception {
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "HubShared",
        ConfigFactory.load());
    RdmaRuntime runtime = RdmaRuntime.get(system);
    RdmaProvider provider = runtime.provider();
    DeviceContext context = provider.open(provider.devices().get(0).name());
    try {
      CompletionHub a = runtime.hubs().acquire(context);
      CompletionHub b = runtime.hubs().acquire(context);
      assertSame(a, b);
      CompletionQueue woken = a.createCq(16, () -> {});
      CompletionQueue polled = b.createPolledCq(16, IGNORE);
      assertTrue(a.hasThread(), "a polled CQ needs the hub's thread");
      a.closeCq(woken);
      runtime.hubs().release(a).toCompletableFuture().get(5, TimeUnit.SECONDS);
      assertEquals(1, runtime.hubs().size(), "one user is left");
      b.closeCq(polled);
      runtime.hubs().release(b).toCompletableFuture().get(5, TimeUnit.SECONDS);
      assertEquals(0, runtime.hubs().size());
      assertEquals(0, provider.liveResources().cqs());
    } finally {
      context.close(); // fails (EBUSY) if the hub left its channel open
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void whenTheSystemStopsTheHubFirstItsLastUserStillClosesEverything() throws Exception {
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "HubStoppedFirst",
        ConfigFactory.load());
    RdmaRuntime runtime = RdmaRuntime.get(system);
    RdmaProvider provider = runtime.provider();
    DeviceContext context = provider.open(provider.devices().get(0).name());
    CompletionHub hub = runtime.hubs().acquire(context);
    CompletionQueue polled = hub.createPolledCq(16, IGNORE);
    system.terminate(); // stops the hub's runner while its CQ's owner still holds it
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);

    hub.closeCq(polled);
    runtime.hubs().release(hub).toCompletableFuture().get(5, TimeUnit.SECONDS);
    assertEquals(0, provider.liveResources().cqs());
    context.close(); // fails (EBUSY) if the channel were left open
  }
}
