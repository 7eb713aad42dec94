package dev.pekkordma.verbs.spi;

import dev.pekkordma.verbs.ResourceCounts;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A provider's live resources, counted up as each is made and down as it is destroyed: what
 * {@link dev.pekkordma.verbs.RdmaProvider#liveResources()} reports, and how tests prove nothing leaked.
 */
public final class ResourceCounters {
  public final AtomicInteger contexts = new AtomicInteger();
  public final AtomicInteger pds = new AtomicInteger();
  public final AtomicInteger mrs = new AtomicInteger();
  public final AtomicInteger mws = new AtomicInteger();
  public final AtomicInteger cqs = new AtomicInteger();
  public final AtomicInteger qps = new AtomicInteger();
  public final AtomicInteger srqs = new AtomicInteger();
  public final AtomicInteger ahs = new AtomicInteger();
  public final AtomicInteger cmIds = new AtomicInteger();

  public ResourceCounts snapshot() {
    return new ResourceCounts(contexts.get(), pds.get(), mrs.get(), mws.get(), cqs.get(),
        qps.get(), srqs.get(), ahs.get(), cmIds.get());
  }
}
