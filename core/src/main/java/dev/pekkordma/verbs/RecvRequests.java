package dev.pekkordma.verbs;

import static dev.pekkordma.verbs.abi.RequestLayout.*;
/**
 * A reusable batch of receive work requests in off-heap memory, laid out as {@code struct
 * ibv_recv_wr} (32 bytes each) followed by their {@code struct ibv_sge} lists.
 */
public final class RecvRequests extends RequestBatch {
  public RecvRequests(int capacity, int maxSgePerRequest) {
    super("RecvRequests", RECV_WR_SIZE, capacity, maxSgePerRequest);
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
