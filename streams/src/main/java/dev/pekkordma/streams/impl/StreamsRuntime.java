package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.CompletionHubs;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.verbs.RdmaProvider;
import java.util.function.UnaryOperator;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.stage.AsyncCallback;

/** What every stage of one actor system shares: the system's runtime, and the settings. */
@InternalApi
public final class StreamsRuntime {
  public final ActorSystem<?> system;
  public final RdmaRuntime runtime;
  public final RdmaProvider provider;
  public final RdmaStreamSettings settings;
  public final RdmaStreamSettings bulkSettings;
  public final CompletionHubs hubs;
  final RingSizing.SizingSettings ringSizing;
  /** pekko-rdma.streams.coalesce-writes: small elements queued behind a write go together. */
  final boolean coalesceWrites;
  /** The connections' metrics and Flight Recorder events. */
  public final StreamsMeter meter = new StreamsMeter();

  public StreamsRuntime(ActorSystem<?> system) {
    this(system, RdmaRuntime.get(system));
  }

  /**
   * As above, on a runtime of its own whose CM event channel is handed through {@code cmChannel}
   * first: tests wrap it to make reading fail.
   */
  public StreamsRuntime(ActorSystem<?> system, UnaryOperator<CmEventChannel> cmChannel) {
    this(system, RdmaRuntime.withCmChannel(system, cmChannel));
  }

  private StreamsRuntime(ActorSystem<?> system, RdmaRuntime runtime) {
    this.system = system;
    // checked first: a wrong value fails naming its key before anything is opened
    this.settings = RdmaStreamSettings.create(system.settings().config());
    this.bulkSettings = RdmaStreamSettings.bulk(system.settings().config());
    try {
      this.ringSizing = RingSizing.SizingSettings.from(system.settings().config());
      this.coalesceWrites = system.settings().config().getBoolean(
          "pekko-rdma.streams.coalesce-writes");
    } catch (IllegalArgumentException e) {
      throw new com.typesafe.config.ConfigException.Generic(e.getMessage(), e);
    }
    this.runtime = runtime;
    this.provider = runtime.provider();
    this.hubs = runtime.hubs();
    system.getWhenTerminated().thenRun(meter::close);
  }

  /** The system's CM dispatcher, started by the first connection or binding. */
  public CmDispatcher cm() {
    return runtime.cm();
  }

  /**
   * A stage's connection id: its events go to {@code events}, an async callback, which only
   * hands them on, so they may be delivered in the thread that raised them.
   */
  public CmId createId(Object context, AsyncCallback<CmEvent> events,
      AsyncCallback<RuntimeException> stopped) {
    return cm().createId(context, RdmaPortSpace.TCP, CmDispatcher.Delivery.IMMEDIATE,
        events::invoke, stopped::invoke);
  }
}
