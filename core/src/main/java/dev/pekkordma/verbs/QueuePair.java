package dev.pekkordma.verbs;

import java.util.Optional;

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

  /**
   * Binds a type-1 memory window to {@code [address, address+length)} of {@code mr} with {@code
   * access} ({@code ibv_bind_mw}); a length of 0 unbinds it. Posted on the send queue: a BIND_MW
   * completion follows when {@code sendFlags} has SIGNALED, or an error completion. Returns the
   * window's new rkey.
   */
  int bindMemoryWindow(MemoryWindow mw, long wrId, int sendFlags, MemoryRegion mr, long address,
      long length, int access);

  /**
   * Why the QP went to the error state, where the provider knows more than a completion's
   * status says: the peer and what it did or failed to do ("no answer from QP 0x1a2b at
   * 10.0.0.2:7070 within 8 tries of 67 ms"). Empty while nothing failed, and on providers whose
   * hardware does not say.
   */
  default Optional<String> errorCause() {
    return Optional.empty();
  }

  /** Destroys the QP ({@code ibv_destroy_qp}). */
  @Override
  void close();
}
