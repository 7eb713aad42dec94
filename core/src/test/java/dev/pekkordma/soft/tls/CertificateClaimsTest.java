package dev.pekkordma.soft.tls;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.testing.TlsStores;
import java.io.InputStream;
import java.net.InetAddress;
import java.nio.file.Files;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import org.junit.jupiter.api.Test;

/**
 * Which fabric addresses a certificate may claim: any port of its IP subject alternative names,
 * unless pekko-rdma.soft.tls.identities names it (by subject or fingerprint), which then gives
 * its addresses alone; and the setting is checked when read.
 */
class CertificateClaimsTest {
  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  @Test
  void aCertificateMayClaimAnyPortOfItsIpSubjectAlternativeNames() throws Exception {
    CertificateClaims claims = claims("[]");
    X509Certificate alice = certificate(TlsStores.ALICE);
    assertNull(claims.refusal(alice, LOOPBACK, 7070));
    assertNull(claims.refusal(alice, LOOPBACK, 1));
    String other = claims.refusal(alice, InetAddress.getByName("10.0.0.1"), 7070);
    assertTrue(other.contains("CN=alice") && other.contains("10.0.0.1:7070")
        && other.contains("pekko-rdma.soft.tls.identities"), other);
  }

  @Test
  void anIdentityNamedBySubjectMayClaimOnlyItsAddresses() throws Exception {
    CertificateClaims claims = claims("[{ certificate = \"CN=alice, O=pekko-rdma tests\","
        + " addresses = [\"127.0.0.1:7070\", \"10.0.0.1\"] }]");
    X509Certificate alice = certificate(TlsStores.ALICE);
    assertNull(claims.refusal(alice, LOOPBACK, 7070));
    assertNull(claims.refusal(alice, InetAddress.getByName("10.0.0.1"), 9));
    String port = claims.refusal(alice, LOOPBACK, 7071);
    assertTrue(port.contains("may claim only") && port.contains("127.0.0.1:7071"), port);
    assertNull(claims.refusal(certificate(TlsStores.BOB), LOOPBACK, 7071),
        "bob is not named: his SAN applies");
  }

  @Test
  void anIdentityNamedByFingerprintMayClaimOnlyItsAddresses() throws Exception {
    X509Certificate bob = certificate(TlsStores.BOB);
    String fingerprint = CertificateClaims.fingerprint(bob).toUpperCase().replaceAll("(..)(?!$)",
        "$1:");
    CertificateClaims claims = claims("[{ certificate = \"" + fingerprint + "\","
        + " addresses = [\"127.0.0.1:9000\"] }]");
    assertNull(claims.refusal(bob, LOOPBACK, 9000));
    assertTrue(claims.refusal(bob, LOOPBACK, 9001) != null);
  }

  @Test
  void identitiesAreCheckedWhenRead() {
    ConfigException bad = assertThrows(ConfigException.class, () -> claims(
        "[{ certificate = \"not a = = name\", addresses = [\"127.0.0.1\"] }]"));
    assertTrue(bad.getMessage().contains("pekko-rdma.soft.tls.identities"), bad.getMessage());
    ConfigException none = assertThrows(ConfigException.class, () -> claims(
        "[{ certificate = \"CN=x\", addresses = [] }]"));
    assertTrue(none.getMessage().contains("no addresses"), none.getMessage());
    ConfigException host = assertThrows(ConfigException.class, () -> claims(
        "[{ certificate = \"CN=x\", addresses = [\"node-1:7070\"] }]"));
    assertTrue(host.getMessage().contains("not an IPv4 address"), host.getMessage());
  }

  private static CertificateClaims claims(String identities) {
    return new CertificateClaims(RdmaSettings.from(ConfigFactory.parseString(
        "pekko-rdma.soft.tls.identities = " + identities)).soft().tls.identities);
  }

  private static X509Certificate certificate(String identity) throws Exception {
    try (InputStream in = Files.newInputStream(TlsStores.get().certificate(identity))) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
  }
}
