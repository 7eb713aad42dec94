package dev.pekkordma.soft;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The nonces of this process's HELLOs still waiting for their answer, each with the channel
 * binding its connection had. A PROOF connection is let in only for a nonce here that no other
 * PROOF took ({@link #claim}: nobody else can fill the lane it takes), and the nonce is proven
 * only for the same binding, once.
 */
final class Nonces {
  private final SecureRandom random = new SecureRandom();
  private final Map<ByteBuffer, PendingNonce> pending = new ConcurrentHashMap<>();

  private static final class PendingNonce {
    final byte[] binding;
    volatile boolean claimed;

    PendingNonce(byte[] binding) {
      this.binding = binding;
    }
  }

  /** A new nonce for a HELLO sent on a connection with {@code binding}. */
  byte[] issue(byte[] binding) {
    byte[] nonce = new byte[FabricWire.NONCE_BYTES];
    do {
      random.nextBytes(nonce);
    } while (pending.putIfAbsent(ByteBuffer.wrap(nonce.clone()), new PendingNonce(binding))
        != null);
    return nonce;
  }

  /** The HELLO was answered (or failed): its nonce proves nothing any more. */
  void forget(byte[] nonce) {
    pending.remove(ByteBuffer.wrap(nonce));
  }

  /** True once for a nonce waiting for its proof: the PROOF connection asking may come in. */
  boolean claim(byte[] nonce) {
    PendingNonce p = pending.get(ByteBuffer.wrap(nonce));
    if (p == null) return false;
    synchronized (p) {
      if (p.claimed) return false;
      p.claimed = true;
      return true;
    }
  }

  /** Whether {@code nonce} was issued for a connection with {@code binding}; asked once. */
  boolean proves(byte[] nonce, byte[] binding) {
    PendingNonce p = pending.remove(ByteBuffer.wrap(nonce));
    return p != null && ChannelBinding.same(p.binding, binding);
  }
}
