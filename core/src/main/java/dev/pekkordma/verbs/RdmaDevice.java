package dev.pekkordma.verbs;

/** An entry of the device list ({@code ibv_get_device_list}): open it for a {@link DeviceContext}. */
public record RdmaDevice(String name, long guid, String transport, String provider) {
  @Override
  public String toString() {
    return name + " (" + provider + ", " + transport + ", guid " + Long.toHexString(guid) + ")";
  }
}
