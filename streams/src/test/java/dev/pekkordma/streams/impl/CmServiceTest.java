package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.actors.RdmaActorsSettings;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The streams' CM at the system's end: the ids its stages own are theirs to destroy (a second
 * hand would free them under the stages' own calls), and the channel goes after the last one.
 */
class CmServiceTest {
  final Config config = ConfigFactory.load(); // the run's provider: soft, or native in the VM
  final RdmaProvider provider = RdmaProviders.load(config);
  final CmEventChannel channel = provider.createCmEventChannel();
  final ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "CmServiceTest", config);
  final CmService cm = new CmService(system, channel,
      RdmaActorsSettings.from(config).pollerDispatcher, Duration.ofMillis(20), device -> { });

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
    CmId owned = cm.createId("a stage's id", event -> { });
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
    cm.destroy(cm.createId("done before the end", event -> { }), false);
    terminateSystem();

    assertEquals(0, provider.liveResources().cmIds());
    assertThrows(RdmaException.class, () -> channel.createId("late"));
  }
}
