package dev.pekkordma.verbs;

/** A shared receive queue ({@code ibv_srq}). */
public interface SharedReceiveQueue extends AutoCloseable {
  ProtectionDomain pd();

  SrqAttributes query();

  /** Arms the limit: SRQ_LIMIT_REACHED fires once when fewer than {@code limit} receives remain. */
  void armLimit(int limit);

  /** Posts every request in the batch ({@code ibv_post_srq_recv}). */
  void postRecv(RecvRequests requests);

  @Override
  void close();
}
