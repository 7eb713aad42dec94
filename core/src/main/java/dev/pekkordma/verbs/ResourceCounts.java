package dev.pekkordma.verbs;

/** Live resources of one provider, for leak checks (like {@code rdma resource show}). */
public record ResourceCounts(
    int contexts, int pds, int mrs, int mws, int cqs, int qps, int srqs, int ahs, int cmIds) {

  public ResourceCounts minus(ResourceCounts o) {
    return new ResourceCounts(contexts - o.contexts, pds - o.pds, mrs - o.mrs, mws - o.mws,
        cqs - o.cqs, qps - o.qps, srqs - o.srqs, ahs - o.ahs, cmIds - o.cmIds);
  }
}
