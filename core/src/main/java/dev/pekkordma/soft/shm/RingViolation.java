package dev.pekkordma.soft.shm;

import dev.pekkordma.annotation.InternalApi;
import java.io.IOException;

/**
 * The peer wrote a position into a shared ring that no honest peer could: it went back, or
 * claims more bytes than the ring holds. The link it came on is broken, as by a frame that breaks
 * the fabric's protocol.
 */
@InternalApi
public final class RingViolation extends IOException {
  RingViolation(String message) {
    super(message);
  }
}
