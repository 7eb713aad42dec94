package dev.pekkordma.verbs;

import dev.pekkordma.cm.CmEventChannel;
import java.util.List;
import java.util.Optional;

/**
 * One implementation of the verbs: the embedded software provider or the native one. Obtain it
 * from {@link RdmaProviders}; closing it closes everything it opened.
 */
public interface RdmaProvider extends AutoCloseable {
  /** "soft" or "native". */
  String name();

  /** The device list ({@code ibv_get_device_list}). */
  List<RdmaDevice> devices();

  /** Opens a device ({@code ibv_open_device}). */
  DeviceContext open(RdmaDevice device);

  /** Opens the device of that name, or fails listing the names there are. */
  default DeviceContext open(String deviceName) {
    for (RdmaDevice d : devices()) {
      if (d.name().equals(deviceName)) return open(d);
    }
    throw new RdmaException("ibv_open_device", RdmaException.ENODEV,
        "no device named '" + deviceName + "'; devices: " + devices());
  }

  /** A connection manager event channel ({@code rdma_create_event_channel}). */
  CmEventChannel createCmEventChannel();

  /** What this provider can do; the conformance suite skips, with the reason, what it cannot. */
  boolean supports(Feature feature);

  /** Live resources opened through this provider. */
  ResourceCounts liveResources();

  /** Fault injection, where the provider has it (the software provider does). */
  default Optional<FaultInjection> faults() {
    return Optional.empty();
  }

  @Override
  void close();

  /** Optional capabilities. */
  enum Feature {
    UD, UC, SRQ, MEMORY_WINDOW_TYPE_1, MEMORY_WINDOW_TYPE_2, ATOMICS, CQ_RESIZE, REREGISTER_MR,
    CONNECTION_MANAGER
  }
}
