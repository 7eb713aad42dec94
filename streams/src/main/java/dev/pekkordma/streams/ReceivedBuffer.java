package dev.pekkordma.streams;

import java.nio.ByteBuffer;

/**
 * One RDMA write received by {@link RdmaStreams#bulkBufferSource}, in place: a read-only view of
 * the registered receive-ring slot the write landed in, lent to the application until {@link
 * #release()}. No copy is made; the slot (and the sender's credit for it) comes back only on
 * release, so holding buffers stops the sender as not pulling does.
 *
 * <p>Release every element exactly once, from any thread, in any order. Afterwards neither this
 * object nor the ByteBuffer it gave may be used: the object is reused for a later write into the
 * same slot (the source allocates nothing per message), and the memory may already hold that
 * write, or be freed once the stream has ended. Use after release fails with an
 * {@link IllegalStateException} as long as the slot has not been reused.
 */
public interface ReceivedBuffer {
  /**
   * The data, read-only: position 0, limit the bytes written (the same view on every call, so
   * reading it relative advances it for the next caller; {@code duplicate()} to keep it).
   *
   * @throws IllegalStateException after {@link #release()}
   */
  ByteBuffer buffer();

  /** The bytes written, the buffer's limit as delivered. */
  int length();

  /**
   * Whether this write ended what the sender sent as one element: always for a {@link
   * BulkChunk}; for a ByteString that {@code bulkSink} split across writes, only its last.
   */
  boolean endsElement();

  /**
   * Gives the slot back. Credits go back to the sender in ring order, so a buffer released
   * before older ones frees nothing until they are released too.
   *
   * @throws IllegalStateException when this element was released already
   */
  void release();
}
