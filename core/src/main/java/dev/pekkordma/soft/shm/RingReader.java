package dev.pekkordma.soft.shm;

import java.io.IOException;
import java.io.InputStream;

/**
 * The consuming end of a ring, as a stream. A read takes all that is there (up to what was asked)
 * and publishes the new position once. With nothing there it spins briefly, then says in its own
 * field that it is waiting and blocks on the doorbell, the link's socket: the producer writes a
 * byte there when it publishes and sees the flag. Both sides store then load with full fences
 * (Dekker), so either the producer sees the flag or this side sees the bytes: no wake-up is lost,
 * and a spurious one costs a loop. The socket's end (the peer closed or died) ends the stream
 * once what the ring holds is read.
 */
final class RingReader extends InputStream {
  private static final int SPINS = 200;

  private final SharedRing ring;
  private final InputStream doorbell;
  private final RingLink link;
  private final byte[] rings = new byte[64];
  private final byte[] one = new byte[1];
  /** The bytes taken so far: this side's truth, only ever published. */
  private long consumed;
  /** The producer's position last seen (it never goes back). */
  private long produced;
  private boolean socketEnded;

  RingReader(SharedRing ring, InputStream doorbell, RingLink link) {
    this.ring = ring;
    this.doorbell = doorbell;
    this.link = link;
  }

  @Override
  public int read() throws IOException {
    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (len == 0) return 0;
    try {
      long available = produced - consumed; // what the last look at the producer showed
      if (available <= 0) available = await();
      if (available < 0) return -1;
      int n = (int) Math.min(available, len);
      ring.copyOut(consumed, b, off, n);
      consumed += n;
      SharedRing.LONGS.setRelease(ring.map, ring.consumerAt, consumed);
      return n;
    } catch (InternalError e) {
      throw ring.gone(e);
    }
  }

  @Override
  public int available() throws IOException {
    try {
      long n = produced - consumed;
      if (n <= 0) {
        ring.checkIntact();
        n = producedNow() - consumed;
      }
      return (int) Math.min(Integer.MAX_VALUE, n);
    } catch (InternalError e) {
      throw ring.gone(e);
    }
  }

  /** Bytes ready to read, waiting for some; -1 once the socket ended and the ring is empty. */
  private long await() throws IOException {
    ring.checkIntact();
    for (int i = 0; i < SPINS; i++) {
      long n = producedNow() - consumed;
      if (n > 0) return n;
      link.checkOpen();
      Thread.onSpinWait();
    }
    while (true) {
      SharedRing.LONGS.setVolatile(ring.map, ring.waitingAt, 1L);
      long n = producedNow() - consumed;
      if (n > 0 || socketEnded) {
        SharedRing.LONGS.setOpaque(ring.map, ring.waitingAt, 0L);
        return n > 0 ? n : -1;
      }
      link.checkOpen();
      int got;
      try {
        got = doorbell.read(rings, 0, rings.length);
      } catch (IOException e) {
        link.checkOpen();
        throw e;
      }
      if (got < 0) socketEnded = true;
    }
  }

  private long producedNow() throws RingViolation {
    produced = ring.peerPosition(ring.producerAt, produced, consumed + ring.capacity,
        "producer");
    return produced;
  }

  @Override
  public void close() {
    link.close();
  }
}
