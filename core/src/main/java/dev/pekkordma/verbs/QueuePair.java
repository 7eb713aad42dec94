package dev.pekkordma.verbs;

/** A queue pair ({@code ibv_qp}). */
public interface QueuePair extends AutoCloseable {
  ProtectionDomain pd();

  int qpNum();

  QpType type();

  QpState state();

  /** The sizes the QP was created with (possibly larger than asked). */
  QpCapabilities capabilities();

  QpAttributes query();

  /**
   * Modifies the QP ({@code ibv_modify_qp}): the attributes set on {@code attributes} form the
   * mask. An illegal transition throws {@link IllegalQpTransitionException}.
   */
  void modify(QpAttributes attributes);

  /**
   * Posts every request in the batch, in order ({@code ibv_post_send}). On a bad request nothing
   * from it on is posted and the exception says which one and why.
   */
  void postSend(SendRequests requests);

  /** Posts every receive in the batch ({@code ibv_post_recv}). */
  void postRecv(RecvRequests requests);

  /** Destroys the QP ({@code ibv_destroy_qp}). */
  @Override
  void close();
}
