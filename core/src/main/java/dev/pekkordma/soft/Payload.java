package dev.pekkordma.soft;

/**
 * The data of one incoming message, read once and in order: a requester's memory in this JVM
 * ({@link MemoryPayload}), or the rest of a frame on a fabric connection. The responder copies
 * what it accepted and finishes; the length was checked against the limits before any of it was
 * read, and is never trusted beyond the destination the responder checked.
 */
interface Payload {
  long length();

  /**
   * Copies the next {@code len} bytes into {@code dst} from {@code dstOffset}, inside the fences
   * (see {@link Segments#copy}); returns {@link Segments#COPIED} or which side went away.
   */
  int copyTo(Segments dst, long dstOffset, long len, AccessFence owner, int ownerGeneration);

  /**
   * Consumes whatever was not copied; true when the sender delivered the whole message (its
   * memory stayed registered while it was read).
   */
  boolean finish();
}
