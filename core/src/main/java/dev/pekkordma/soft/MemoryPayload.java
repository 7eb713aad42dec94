package dev.pekkordma.soft;

/** A requester's gather list in this JVM, read in place: one copy from its memory to ours. */
final class MemoryPayload implements Payload {
  private Segments source;
  private long position;
  private boolean sourceGone;

  /** Reuses this object for the next message. */
  MemoryPayload of(Segments gather) {
    source = gather;
    position = 0;
    sourceGone = false;
    return this;
  }

  @Override
  public long length() {
    return source.total();
  }

  @Override
  public int copyTo(Segments dst, long dstOffset, long len, AccessFence owner,
      int ownerGeneration) {
    int result = Segments.copy(source, position, dst, dstOffset, len, owner, ownerGeneration);
    position += len;
    if (result == Segments.SOURCE_GONE) sourceGone = true;
    return result;
  }

  @Override
  public boolean finish() {
    return !sourceGone;
  }

  boolean sourceGone() {
    return sourceGone;
  }
}
