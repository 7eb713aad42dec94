package dev.pekkordma.streams.impl;

import dev.pekkordma.actors.RdmaActorsSettings;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.verbs.RdmaProvider;
import java.util.function.UnaryOperator;
import org.apache.pekko.actor.typed.ActorSystem;

/** What every stage of one actor system shares: the provider, the CM, the device hubs. */
public final class StreamsRuntime {
  public final ActorSystem<?> system;
  public final RdmaProvider provider;
  public final RdmaStreamSettings settings;
  public final RdmaStreamSettings bulkSettings;
  public final RdmaActorsSettings actorsSettings;
  public final CmService cm;
  public final Hubs hubs;

  public StreamsRuntime(ActorSystem<?> system) {
    this(system, UnaryOperator.identity());
  }

  /**
   * As above, with the CM's event channel handed through {@code cmChannel} first: tests wrap it
   * to make reading fail. One runtime per actor system (the CM's reader has a fixed name).
   */
  public StreamsRuntime(ActorSystem<?> system, UnaryOperator<CmEventChannel> cmChannel) {
    this.system = system;
    // checked first: a wrong value fails naming its key before anything is opened
    this.settings = RdmaStreamSettings.create(system.settings().config());
    this.bulkSettings = RdmaStreamSettings.bulk(system.settings().config());
    RdmaExtension rdma = RdmaExtension.get(system);
    this.provider = rdma.provider();
    this.actorsSettings = rdma.settings();
    this.cm = new CmService(system, cmChannel.apply(provider.createCmEventChannel()),
        actorsSettings.pollerDispatcher, actorsSettings.blockTimeout, rdma::deviceRemoved);
    this.hubs = new Hubs(system, actorsSettings.pollerDispatcher, actorsSettings.blockTimeout);
  }
}
