package dev.pekkordma.runtime;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.runtime.internal.AgentRunner;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.CompletionHubs;
import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * What the actors and streams of one actor system share: the provider named by {@code
 * pekko-rdma.provider}, one CM event dispatcher and one completion hub per device context in use.
 * Nothing runs until it is used: the CM's thread starts with the first CM id, a hub's with its
 * first CQ that needs one. Terminating the system stops them and then closes the provider.
 */
public final class RdmaRuntime implements Extension {
  private final ActorSystem<?> system;
  private final RuntimeSettings settings;
  private final RdmaProvider provider;
  private final UnaryOperator<CmEventChannel> cmChannel;
  private final CompletionHubs hubs = new CompletionHubs(this);
  private final MemoryBudget memory;
  private final List<Consumer<String>> removalListeners = new CopyOnWriteArrayList<>();
  private final AtomicLong names = new AtomicLong();
  private CmDispatcher cm; // guarded by this

  private RdmaRuntime(ActorSystem<?> system, UnaryOperator<CmEventChannel> cmChannel) {
    this.system = system;
    this.settings = RuntimeSettings.from(system.settings().config());
    this.cmChannel = cmChannel;
    this.memory = new MemoryBudget(settings.maxRegisteredMemory);
    this.provider = RdmaProviders.load(system.settings().config());
    Runnable stopPortEvents = PortEvents.register(this);
    system.getWhenTerminated().whenComplete((done, failure) -> {
      stopPortEvents.run();
      provider.close();
    });
  }

  public static RdmaRuntime get(ActorSystem<?> system) {
    return RdmaRuntimeId.INSTANCE.apply(system);
  }

  /**
   * A runtime of its own beside the system's, with the CM's event channel handed through {@code
   * cmChannel} first: tests wrap it to make reading fail. It closes its own provider at the
   * system's end.
   */
  @InternalApi
  public static RdmaRuntime withCmChannel(ActorSystem<?> system,
      UnaryOperator<CmEventChannel> cmChannel) {
    return new RdmaRuntime(system, cmChannel);
  }

  public ActorSystem<?> system() {
    return system;
  }

  public RuntimeSettings settings() {
    return settings;
  }

  public RdmaProvider provider() {
    return provider;
  }

  /** The registered memory the library may still take ({@value MemoryBudget#SETTING}). */
  public MemoryBudget memory() {
    return memory;
  }

  /** The completion hubs of the device contexts in use. */
  @InternalApi
  public CompletionHubs hubs() {
    return hubs;
  }

  /** The CM event dispatcher, started by the first call; fails if the provider has no CM. */
  @InternalApi
  public synchronized CmDispatcher cm() {
    if (cm == null) {
      if (!provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER)) {
        throw new UnsupportedOperationException("the " + provider.name()
            + " provider has no connection manager");
      }
      CmDispatcher d = new CmDispatcher(cmChannel.apply(provider.createCmEventChannel()),
          this::deviceRemoved);
      AgentRunner.start(system, uniqueName("pekko-rdma-cm"), settings.newIdleStrategy(), d);
      cm = d;
    }
    return cm;
  }

  /**
   * What the runtime has started: the CM dispatcher (a channel and a thread), the completion
   * hubs (a channel each) and how many of those have a thread.
   */
  public record Footprint(boolean cm, int hubs, int hubThreads) {
    /** Poller threads: the CM's and the hubs'. */
    public int threads() {
      return (cm ? 1 : 0) + hubThreads;
    }

    /** Event channels: the CM's and the hubs' completion channels. */
    public int channels() {
      return (cm ? 1 : 0) + hubs;
    }
  }

  public synchronized Footprint footprint() {
    return new Footprint(cm != null, hubs.size(), hubs.withThreads());
  }

  /**
   * The counters of every port of the provider's devices, read without opening them: the
   * devices' own, for the actors' QPs, the streams' and any other process's alike.
   */
  public List<PortMetrics> ports() {
    List<PortMetrics> ports = new ArrayList<>();
    for (RdmaDevice device : provider.devices()) {
      List<PortCounters> counters = provider.portCounters(device);
      for (int i = 0; i < counters.size(); i++) {
        ports.add(new PortMetrics(device.name(), i + 1, counters.get(i)));
      }
    }
    return ports;
  }

  /** Hears the name of each device a DEVICE_REMOVAL event announces. */
  public void onDeviceRemoved(Consumer<String> listener) {
    removalListeners.add(listener);
  }

  private void deviceRemoved(String device) {
    for (Consumer<String> l : removalListeners) l.accept(device);
  }

  /** A system actor name no other runner of this system has. */
  @InternalApi
  public String uniqueName(String prefix) {
    return prefix + "-" + names.incrementAndGet();
  }

  public static final class RdmaRuntimeId extends ExtensionId<RdmaRuntime> {
    static final RdmaRuntimeId INSTANCE = new RdmaRuntimeId();

    private RdmaRuntimeId() {}

    @Override
    public RdmaRuntime createExtension(ActorSystem<?> system) {
      return new RdmaRuntime(system, UnaryOperator.identity());
    }
  }
}
