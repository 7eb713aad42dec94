package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.testing.TlsStores;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.net.Socket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the gate checks when it makes the TLS handshake itself, in one JVM: an untrusted
 * certificate is refused with a line naming it; a trusted one may claim only its addresses;
 * a proven process is served through the same TLS channel, now blocking. The fabric under test
 * is one of this class's own, on a switch with no devices.
 */
class GateTlsTest {
  private static TlsStores stores;
  private static TcpFabric target;

  @BeforeAll
  static void setUp() {
    stores = TlsStores.get();
    target = TcpFabric.start(RdmaSettings.from(ConfigFactory.parseString(
        stores.config(TlsStores.ALICE) + "pekko-rdma.soft.tls.identities = [{ certificate ="
            + " \"CN=carol, O=pekko-rdma tests\", addresses = [\"127.0.0.1:1\"] }]\n")),
        new SoftFabric());
  }

  @AfterAll
  static void tearDown() {
    target.stop();
  }

  @Test
  void anUntrustedCertificateIsRefusedWithALineNamingIt() throws Exception {
    try (LogCapture log = new LogCapture(TcpFabric.class); Socket plain = new Socket()) {
      plain.connect(target.address().socketAddress(), 5000);
      plain.setSoTimeout(10_000);
      plain.getOutputStream().write(FabricWire.opening(FabricWire.LINK, null));
      SoftTls rogue = tls(TlsStores.ROGUE);
      assertThrows(IOException.class, () -> { // TLS 1.3: at the first read
        Socket s = rogue.client(plain, "the fabric under test");
        s.getOutputStream().write(new byte[FabricWire.HANDSHAKE_BYTES]);
        if (s.getInputStream().read() < 0) throw new IOException("closed");
      });
      log.await(5000, "TLS handshake with", "CN=rogue", "is not trusted here");
    }
  }

  @Test
  void aTrustedCertificateMayClaimOnlyItsAddresses() throws Exception {
    try (LogCapture log = new LogCapture(TcpFabric.class);
        TlsFabricPeer carol = new TlsFabricPeer(tls(TlsStores.CAROL))) {
      RawFabricPeer.Refused refused = assertThrows(RawFabricPeer.Refused.class,
          () -> carol.connect(target.address()));
      assertEquals(FabricWire.CERTIFICATE, refused.code);
      log.await(5000, "CN=carol", "may claim only the addresses");
    }
  }

  @Test
  void aProvenProcessIsServedThroughTheSameTlsChannel() throws Exception {
    try (LogCapture log = new LogCapture(TcpFabric.class);
        TlsFabricPeer bob = new TlsFabricPeer(tls(TlsStores.BOB));
        Socket s = bob.connect(target.address())) {
      RawFabricPeer.Frame f = new RawFabricPeer.Frame();
      f.destDevice = 7;
      f.destQpn = 0x1234;
      f.opcodeOrCode = WrOpcode.RDMA_WRITE.code;
      s.getOutputStream().write(f.header());
      s.getOutputStream().flush();
      log.await(5000, "a request for QP " + 0x1234 + " of device 7", "does not exist");
    }
  }

  private static SoftTls tls(String identity) {
    return SoftTls.from(RdmaSettings.from(ConfigFactory.parseString(stores.config(identity))));
  }
}
