package dev.pekkordma.soft;

import dev.pekkordma.verbs.ResourceCounts;
import java.util.concurrent.atomic.AtomicInteger;

/** Live resources of one software provider. */
final class SoftCounters {
  final AtomicInteger contexts = new AtomicInteger();
  final AtomicInteger pds = new AtomicInteger();
  final AtomicInteger mrs = new AtomicInteger();
  final AtomicInteger mws = new AtomicInteger();
  final AtomicInteger cqs = new AtomicInteger();
  final AtomicInteger qps = new AtomicInteger();
  final AtomicInteger srqs = new AtomicInteger();
  final AtomicInteger ahs = new AtomicInteger();
  final AtomicInteger cmIds = new AtomicInteger();

  ResourceCounts snapshot() {
    return new ResourceCounts(contexts.get(), pds.get(), mrs.get(), mws.get(), cqs.get(),
        qps.get(), srqs.get(), ahs.get(), cmIds.get());
  }
}
