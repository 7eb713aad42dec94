package dev.pekkordma.verbs;

import dev.pekkordma.cm.CmEventChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The provider {@link RdmaProviders} chose, as it was created, with why it was chosen: printing
 * it says which provider serves, on which devices and why ("the soft provider, 1 device(s)
 * [soft0] (pekko-rdma.provider = auto; no RDMA device ...)"). Everything else is the provider's.
 */
final class ChosenProvider implements RdmaProvider {
  private final RdmaProvider provider;
  private final String why;

  ChosenProvider(RdmaProvider provider, String why) {
    this.provider = provider;
    this.why = why;
  }

  @Override
  public String toString() {
    List<String> names = new ArrayList<>();
    for (RdmaDevice d : provider.devices()) names.add(d.name());
    return "the " + provider.name() + " provider, " + names.size() + " device(s) " + names + " ("
        + why + ")";
  }

  @Override
  public String name() {
    return provider.name();
  }

  @Override
  public List<RdmaDevice> devices() {
    return provider.devices();
  }

  @Override
  public DeviceContext open(RdmaDevice device) {
    return provider.open(device);
  }

  @Override
  public DeviceContext open(String deviceName) {
    return provider.open(deviceName);
  }

  @Override
  public List<PortCounters> portCounters(RdmaDevice device) {
    return provider.portCounters(device);
  }

  @Override
  public CmEventChannel createCmEventChannel() {
    return provider.createCmEventChannel();
  }

  @Override
  public boolean supports(Feature feature) {
    return provider.supports(feature);
  }

  @Override
  public ResourceCounts liveResources() {
    return provider.liveResources();
  }

  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(this) ? Optional.of(type.cast(this)) : provider.unwrap(type);
  }

  @Override
  public void close() {
    provider.close();
  }
}
