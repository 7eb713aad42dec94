package dev.pekkordma.soft.tls;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.config.RdmaSettings.TlsIdentity;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import javax.security.auth.x500.X500Principal;

/**
 * Which fabric addresses a certificate may claim: a trusted certificate proves who holds its
 * key, not which process it is, so a peer may speak only for the addresses its certificate names.
 * An entry of {@code pekko-rdma.soft.tls.identities} that names the certificate (by subject or
 * SHA-256 fingerprint) gives its addresses (a host, or a host and port); a certificate no entry
 * names may claim any port of the IPv4 addresses among its subject alternative names.
 */
@InternalApi
public final class CertificateClaims {
  private static final String SETTING = "pekko-rdma.soft.tls.identities";
  private static final int IP_ADDRESS_NAME = 7; // GeneralName's iPAddress

  private final List<TlsIdentity> identities;

  CertificateClaims(List<TlsIdentity> identities) {
    this.identities = List.copyOf(identities);
  }

  /** Null if {@code certificate} may claim {@code ip:port}; else why not, for the log. */
  public String refusal(X509Certificate certificate, InetAddress ip, int port) {
    String subject = certificate.getSubjectX500Principal().getName();
    boolean named = false;
    for (TlsIdentity id : identities) {
      if (!names(id, certificate)) continue;
      named = true;
      for (String a : id.addresses()) {
        if (covers(a, ip, port)) return null;
      }
    }
    if (named) {
      return "its certificate '" + subject + "' may claim only the addresses " + SETTING
          + " gives it, not " + SocketAddresses.format(new InetSocketAddress(ip, port));
    }
    for (String san : ipNames(certificate)) {
      if (san.equals(ip.getHostAddress())) return null;
    }
    return "its certificate '" + subject + "' names no fabric address " + ip.getHostAddress()
        + ":" + port + " (neither an IP subject alternative name nor " + SETTING + ")";
  }

  private static boolean names(TlsIdentity id, X509Certificate c) {
    String wanted = id.certificate();
    if (TlsIdentity.isFingerprint(wanted)) {
      return TlsIdentity.fingerprint(wanted).equals(fingerprint(c));
    }
    return new X500Principal(wanted).equals(c.getSubjectX500Principal());
  }

  private static boolean covers(String address, InetAddress ip, int port) {
    int colon = address.indexOf(':');
    String host = colon < 0 ? address : address.substring(0, colon);
    return host.equals(ip.getHostAddress())
        && (colon < 0 || Integer.parseInt(address.substring(colon + 1)) == port);
  }

  private static List<String> ipNames(X509Certificate c) {
    try {
      Collection<List<?>> names = c.getSubjectAlternativeNames();
      if (names == null) return List.of();
      return names.stream().filter(n -> (Integer) n.get(0) == IP_ADDRESS_NAME)
          .map(n -> String.valueOf(n.get(1))).toList();
    } catch (CertificateParsingException e) {
      return List.of();
    }
  }

  /** The certificate's SHA-256 fingerprint, lower-case hex without separators. */
  static String fingerprint(X509Certificate c) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(
          c.getEncoded()));
    } catch (NoSuchAlgorithmException | CertificateEncodingException e) {
      throw new IllegalStateException("cannot fingerprint " + c.getSubjectX500Principal(), e);
    }
  }
}
