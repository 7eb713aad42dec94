package dev.pekkordma.actors;

import com.typesafe.config.ConfigException;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Props;

/**
 * The actors' entry point: {@code RdmaExtension.get(system)} starts the actor tree on the
 * system's {@link RdmaRuntime}: it opens the devices of {@code pekko-rdma.actors.devices} (a
 * device actor each), starts the CM actor and gives out their actors. Terminating the system
 * stops them, which frees every resource; the runtime then closes the provider.
 */
public final class RdmaExtension implements Extension {
  private final RdmaRuntime runtime;
  private final RdmaProvider provider;
  private final RdmaActorsSettings settings;
  private final Map<String, ActorRef<DeviceActor.Command>> devices;
  private final ActorRef<CmActor.Command> cm;

  private RdmaExtension(ActorSystem<?> system) {
    settings = RdmaActorsSettings.from(system.settings().config());
    runtime = RdmaRuntime.get(system);
    provider = runtime.provider();
    List<String> names = deviceNames(provider, settings.devices);
    Map<String, ActorRef<DeviceActor.Command>> refs = new LinkedHashMap<>();
    for (String name : names) {
      ContextSource source = new ContextSource() {
        @Override
        public String name() {
          return name;
        }

        @Override
        public OpenedContext open() {
          var context = provider.open(name);
          return new OpenedContext(context, context::close);
        }
      };
      refs.put(name, system.systemActorOf(DeviceActor.create(source, runtime, settings),
          "pekko-rdma-device-" + name, Props.empty()));
    }
    devices = Collections.unmodifiableMap(refs);
    cm = provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER)
        ? system.systemActorOf(CmActor.create(runtime, settings), "pekko-rdma-cm-actor",
            Props.empty())
        : null;
    runtime.onDeviceRemoved(this::deviceRemoved);
  }

  /**
   * The runtime's CM saw the device go (DEVICE_REMOVAL): its actor fails, closing its context so
   * that the kernel can remove the device, and reopens it when it is back.
   */
  private void deviceRemoved(String name) {
    ActorRef<DeviceActor.Command> device = devices.get(name);
    if (device != null) device.tell(new DeviceActor.Fail("DEVICE_REMOVAL"));
  }

  private static List<String> deviceNames(RdmaProvider provider, List<String> wanted) {
    List<String> present = new ArrayList<>();
    for (RdmaDevice d : provider.devices()) present.add(d.name());
    if (wanted.isEmpty()) return present;
    for (String w : wanted) {
      if (!present.contains(w)) {
        throw new ConfigException.BadValue(RdmaActorsSettings.ROOT + ".devices", "no device named '"
            + w + "' on the " + provider.name() + " provider; it has " + present);
      }
    }
    return wanted;
  }

  public static RdmaExtension get(ActorSystem<?> system) {
    return RdmaExtensionId.INSTANCE.apply(system);
  }

  /** The runtime the actors run on, shared with the streams of the same system. */
  public RdmaRuntime runtime() {
    return runtime;
  }

  public RdmaProvider provider() {
    return provider;
  }

  public RdmaActorsSettings settings() {
    return settings;
  }

  /** The names of the open devices, in config order. */
  public List<String> deviceNames() {
    return new ArrayList<>(devices.keySet());
  }

  /** The actor of an open device; fails naming the open ones. */
  public ActorRef<DeviceActor.Command> device(String name) {
    ActorRef<DeviceActor.Command> ref = devices.get(name);
    if (ref == null) {
      throw new IllegalArgumentException("no open device named '" + name + "'; open: "
          + devices.keySet());
    }
    return ref;
  }

  /** The first open device's actor. */
  public ActorRef<DeviceActor.Command> device() {
    return devices.values().iterator().next();
  }

  /** The connection manager's actor; fails if the provider has no connection manager. */
  public ActorRef<CmActor.Command> cm() {
    if (cm == null) {
      throw new UnsupportedOperationException("the " + provider.name()
          + " provider has no connection manager");
    }
    return cm;
  }

  public static final class RdmaExtensionId extends ExtensionId<RdmaExtension> {
    static final RdmaExtensionId INSTANCE = new RdmaExtensionId();

    private RdmaExtensionId() {}

    @Override
    public RdmaExtension createExtension(ActorSystem<?> system) {
      return new RdmaExtension(system);
    }
  }
}
