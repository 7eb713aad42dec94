package dev.pekkordma.soft.shm;

import java.io.IOException;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * The producing end of a ring, as a stream. Writes copy into the ring and are published together
 * at {@link #flush} (one release store for a frame's header and payload), or when the ring is
 * full and the consumer must see them to make room. A full ring is waited out by spinning, then
 * short parks: the consumer is draining then, so room comes within microseconds, and a doorbell
 * this way would need a second reader on the socket, whose one reader is the consumer of the
 * other ring. A ring that stays full for the space timeout (the peer stopped reading, or died
 * with this side writing) fails the write.
 */
final class RingWriter extends OutputStream {
  private static final int SPINS = 200;
  private static final long PARK_NANOS = 50_000;

  private final SharedRing ring;
  private final java.io.OutputStream doorbell;
  private final RingLink link;
  private final byte[] one = new byte[1];
  /** The bytes written into the ring so far (published or not): this side's truth. */
  private long produced;
  private long published;
  /** The consumer's position last seen (it never goes back). */
  private long consumed;

  RingWriter(SharedRing ring, OutputStream doorbell, RingLink link) {
    this.ring = ring;
    this.doorbell = doorbell;
    this.link = link;
  }

  @Override
  public void write(int b) throws IOException {
    one[0] = (byte) b;
    write(one, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (produced == published) ring.checkIntact(); // a burst begins
    try {
      while (len > 0) {
        long room = room();
        if (room == 0) {
          publish();
          room = awaitRoom();
        }
        int n = (int) Math.min(room, len);
        ring.copyIn(produced, b, off, n);
        produced += n;
        off += n;
        len -= n;
      }
    } catch (InternalError e) {
      throw ring.gone(e);
    }
  }

  @Override
  public void flush() throws IOException {
    link.checkOpen();
    try {
      if (produced != published) publish();
    } catch (InternalError e) {
      throw ring.gone(e);
    }
  }

  /** Publishes what was written, then rings the doorbell if the consumer waits (see RingReader). */
  private void publish() throws IOException {
    SharedRing.LONGS.setVolatile(ring.map, ring.producerAt, produced);
    published = produced;
    if ((long) SharedRing.LONGS.getVolatile(ring.map, ring.waitingAt) != 0) {
      doorbell.write(1);
      doorbell.flush();
    }
  }

  private long room() throws RingViolation {
    consumed = ring.peerPosition(ring.consumerAt, consumed, produced, "consumer");
    return ring.capacity - (produced - consumed);
  }

  private long awaitRoom() throws IOException {
    long deadline = System.nanoTime() + link.spaceTimeoutNanos;
    for (int i = 0; ; i++) {
      long room = room();
      if (room > 0) return room;
      link.checkOpen();
      if (i < SPINS) {
        Thread.onSpinWait();
        continue;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new SocketTimeoutException(ring.name + ": the peer took none of its bytes for "
            + link.spaceTimeoutNanos / 1_000_000 + " ms (" + link.spaceTimeoutSetting + ")");
      }
      LockSupport.parkNanos(PARK_NANOS);
    }
  }

  @Override
  public void close() {
    link.close();
  }
}
