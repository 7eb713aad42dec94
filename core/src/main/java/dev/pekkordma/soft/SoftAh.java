package dev.pekkordma.soft;

import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;

final class SoftAh extends Closeable implements AddressHandle {
  final SoftPd pd;
  final AddressVector av;
  /** The destination GID's bytes, for datagrams' GRH. */
  final byte[] dgid;
  private final int handle;
  volatile SoftPeer peer; // resolved on first use

  SoftAh(SoftPd pd, AddressVector av) {
    this.pd = pd;
    this.av = av;
    this.dgid = av.dgid().toBytes();
    this.handle = pd.device.handles.add(this);
  }

  @Override
  public String describe() {
    return "AH to " + av.dgid();
  }

  @Override public AddressVector addressVector() { return av; }
  @Override public long handle() { return handle; }

  @Override
  public void close() {
    if (!markClosed()) return;
    pd.device.handles.remove(handle);
    pd.forget(this);
    pd.device.provider.counters.ahs.decrementAndGet();
  }
}
