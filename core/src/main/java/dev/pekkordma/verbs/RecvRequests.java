package dev.pekkordma.verbs;

/**
 * A reusable batch of receive work requests in off-heap memory, laid out as {@code struct
 * ibv_recv_wr} (32 bytes each) followed by their {@code struct ibv_sge} lists.
 */
public final class RecvRequests extends RequestBatch {
  public static final int WR_SIZE = 32;

  public RecvRequests(int capacity, int maxSgePerRequest) {
    super("RecvRequests", WR_SIZE, capacity, maxSgePerRequest);
  }

  public RecvRequests add(long wrId) {
    startRequest(wrId);
    return this;
  }

  public RecvRequests sge(long address, int length, int lkey) {
    appendSge(address, length, lkey);
    return this;
  }

  public RecvRequests sge(MemoryRegion mr, long offset, int length) {
    return sge(mr.address() + offset, length, mr.lkey());
  }
}
