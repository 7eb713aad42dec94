package dev.pekkordma.soft.shm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;

/**
 * One direction of a ring file, as one of its two ends sees it: where its positions and bytes are,
 * and the rule every position the other end wrote must keep. Positions count bytes since the
 * start and only grow; a byte's place in the ring is its position modulo the capacity. This end's
 * own position lives in a field of its own and is only ever published: what the shared page says
 * of it is never read back, since the peer may have written anything there.
 */
final class SharedRing {
  static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  final MappedByteBuffer map;
  private final RingFile file;
  final String name;
  final int capacity;
  private final int mask;
  final int producerAt;
  final int consumerAt;
  final int waitingAt;
  private final int dataAt;
  private static final long CHECK_EVERY_NANOS = 1_000_000;
  /** When this end last found the file whole (each end is one thread's at a time). */
  private long lastCheck;
  private boolean checked;

  SharedRing(RingFile file, int ring, String name) {
    this.map = file.map;
    this.file = file;
    this.name = name;
    this.capacity = file.capacity();
    this.mask = capacity - 1;
    int control = RingFile.control(ring, capacity);
    this.producerAt = control + RingFile.PRODUCER;
    this.consumerAt = control + RingFile.CONSUMER;
    this.waitingAt = control + RingFile.WAITING;
    this.dataAt = control + RingFile.PAGE;
  }

  /**
   * The peer's position, checked: at least {@code last} (positions never go back) and at most
   * {@code limit} (a consumer cannot have taken bytes not yet written; a producer cannot have
   * written more than the ring holds beyond what was taken).
   */
  long peerPosition(int at, long last, long limit, String whose) throws RingViolation {
    long p = (long) LONGS.getVolatile(map, at); // volatile: the waiting reader's Dekker load
    if (p < last || p > limit) {
      throw new RingViolation(name + ": the " + whose + " position " + p + " is outside ["
          + last + ", " + limit + "]");
    }
    return p;
  }

  /**
   * Checks, before the ring is touched, that its file was not shrunk under the mapping: each end
   * does at the start of a burst it writes or of a wait for bytes, at most once a millisecond (a
   * system call each time would cost a busy link more than its frames do).
   */
  void checkIntact() throws java.io.IOException {
    long now = System.nanoTime();
    if (checked && now - lastCheck < CHECK_EVERY_NANOS) return;
    file.checkIntact(name);
    checked = true;
    lastCheck = now;
  }

  /**
   * What touching the mapping failed with when its file shrank between that check and the touch:
   * where the JVM raises the fault at once (interpreted code) it is an InternalError, which here
   * becomes the peer's violation, as a bad position is. Compiled code may raise it later, on
   * whichever thread touched the ring (see docs/security.md).
   */
  RingViolation gone(InternalError e) {
    return new RingViolation(name + ": its memory faulted when touched (the peer truncated the"
        + " file?): " + e.getMessage());
  }

  void copyOut(long position, byte[] b, int off, int n) {
    int i = (int) (position & mask);
    int first = Math.min(n, capacity - i);
    map.get(dataAt + i, b, off, first);
    if (n > first) map.get(dataAt, b, off + first, n - first);
  }

  void copyIn(long position, byte[] b, int off, int n) {
    int i = (int) (position & mask);
    int first = Math.min(n, capacity - i);
    map.put(dataAt + i, b, off, first);
    if (n > first) map.put(dataAt, b, off + first, n - first);
  }
}
