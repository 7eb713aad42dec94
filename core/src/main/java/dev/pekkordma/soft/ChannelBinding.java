package dev.pekkordma.soft;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * What a fabric connection is, as each end sees it, in 32 bytes: SHA-256 over the fabric the
 * connecting side claims (from), the listener it reached (to), and under TLS the certificate the
 * accepting side presented and the one the connecting side presented. A HELLO's nonce is proven
 * only for the binding its issuer saw when it sent it, so a HELLO passed on to another listener,
 * or through a peer that ended TLS and began its own, binds to something else and is refused.
 *
 * <p>Java 17 has no TLS exporter (RFC 5705), which would bind to the session's keys; both
 * certificates are what each end can see and the other cannot forge without the private key.
 */
final class ChannelBinding {
  private static final byte[] LABEL = "pekko-rdma fabric channel binding 1".getBytes(
      java.nio.charset.StandardCharsets.US_ASCII);

  private ChannelBinding() {}

  /**
   * @param serverCertificate the accepting side's certificate (DER), empty without TLS
   * @param clientCertificate the connecting side's, empty without TLS or without one
   */
  static byte[] of(FabricAddress from, FabricAddress to, byte[] serverCertificate,
      byte[] clientCertificate) {
    MessageDigest sha = sha256();
    sha.update(LABEL);
    address(sha, from);
    address(sha, to);
    part(sha, serverCertificate);
    part(sha, clientCertificate);
    return sha.digest();
  }

  /** Equal bindings, compared in constant time. */
  static boolean same(byte[] a, byte[] b) {
    return MessageDigest.isEqual(a, b);
  }

  private static void address(MessageDigest sha, FabricAddress a) {
    sha.update(a.ip());
    sha.update((byte) (a.port() >>> 8));
    sha.update((byte) a.port());
  }

  private static void part(MessageDigest sha, byte[] bytes) {
    sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
    sha.update(bytes);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
