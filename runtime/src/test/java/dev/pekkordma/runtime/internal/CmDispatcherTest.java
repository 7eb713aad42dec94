package dev.pekkordma.runtime.internal;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.runtime.RuntimeSettings;
import dev.pekkordma.testing.FailingCmChannel;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The runtime's CM at the system's end: the ids its owners hold are theirs to destroy (a second
 * hand would free them under the owners' own calls), and the channel goes after the last one.
 * And when reading events fails before that: every owner hears why, new ids are refused.
 */
class CmDispatcherTest {
  final Config config = ConfigFactory.load(); // the run's provider: soft, or native in the VM
  final RdmaProvider provider = RdmaProviders.load(config);
  final CmEventChannel channel = provider.createCmEventChannel();
  final FailingCmChannel failing = new FailingCmChannel(channel);
  final ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "CmDispatcherTest", config);
  final CmDispatcher cm = new CmDispatcher(failing, device -> { });

  {
    AgentRunner.start(system, "cm", new BackoffIdleStrategy(0, 0, Duration.ofMillis(20)), cm);
  }

  @AfterEach
  void closeEverything() throws Exception {
    terminateSystem();
    provider.close();
  }

  void terminateSystem() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @Test
  void anOwnedIdOutlivesTheSystemUntilItsOwnerDestroysItThenTheChannelGoes() throws Exception {
    CmId owned = cm.createId("a stage's id", event -> { }, failed -> { });
    terminateSystem();

    assertEquals(1, provider.liveResources().cmIds(), "the owner's id was destroyed for it");
    CmId another = channel.createId("still open"); // the channel waits for the owner
    another.close();

    cm.destroy(owned, false);
    assertEquals(0, provider.liveResources().cmIds());
    RdmaException closed = assertThrows(RdmaException.class, () -> channel.createId("late"));
    assertEquals(RdmaException.EINVAL, closed.errno(), closed.getMessage());
  }

  @Test
  void withNoIdsLeftTheChannelGoesWithTheSystem() throws Exception {
    cm.destroy(cm.createId("done before the end", event -> { }, failed -> { }), false);
    terminateSystem();

    assertEquals(0, provider.liveResources().cmIds());
    assertThrows(RdmaException.class, () -> channel.createId("late"));
  }

  @Test
  void whenReadingEventsFailsEveryOwnerHearsWhyAndNewIdsAreRefused() throws Exception {
    CompletableFuture<RuntimeException> first = new CompletableFuture<>();
    CompletableFuture<RuntimeException> second = new CompletableFuture<>();
    CmId a = cm.createId("a listener", event -> { }, first::complete);
    CmId b = cm.createId("a connect", event -> { }, second::complete);

    failing.failReading("the channel's file descriptor went bad");

    for (CompletableFuture<RuntimeException> told : List.of(first, second)) {
      RuntimeException why = told.get(10, TimeUnit.SECONDS);
      assertTrue(why.getMessage().contains("the channel's file descriptor went bad"),
          why.getMessage());
    }
    IllegalStateException refused = assertThrows(IllegalStateException.class,
        () -> cm.createId("too late", event -> { }, failed -> { }));
    assertTrue(refused.getMessage().contains("the CM event reader has stopped")
        && refused.getMessage().contains("file descriptor went bad"), refused.getMessage());
    assertEquals(2, provider.liveResources().cmIds(), "the refused id was not left behind");

    cm.destroy(a, false); // the owners' own teardown, as on any failure
    cm.destroy(b, false);
    assertEquals(0, provider.liveResources().cmIds());
    // the reader is gone (its stop may come just after the news): with the last id, the channel
    // (an id of the test's own to probe it would race with the close: on native, destroying an
    // id whose channel closed meanwhile fails with EBADF)
    failing.closed().get(10, TimeUnit.SECONDS);
    RdmaException closed = assertThrows(RdmaException.class, () -> channel.createId("late"));
    assertEquals(RdmaException.EINVAL, closed.errno(), closed.getMessage());
  }
}
