package dev.pekkordma.nativeverbs;

import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;

/** An address handle: {@code struct ibv_ah *}. */
final class NativeAh extends NativeResource implements AddressHandle {
  final NativePd pd;
  private final AddressVector av;

  NativeAh(NativePd pd, long ah, AddressVector av) {
    super(ah, pd);
    this.pd = pd;
    this.av = av;
  }

  @Override int rank() { return 3; }
  @Override public String describe() { return "AH to " + (av.global() ? av.dgid().toString() : "LID " + av.dlid()); }
  @Override String destroyVerb() { return "ibv_destroy_ah"; }
  @Override void destroy() { Verbs.destroyAh(handle); }
  @Override void forget() { pd.context.provider.live.ahs.decrementAndGet(); }

  @Override public AddressVector addressVector() { return av; }
  @Override public long handle() { return handle; }

  @Override
  public String toString() {
    return describe();
  }
}
