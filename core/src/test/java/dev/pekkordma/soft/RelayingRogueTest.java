package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.testing.TlsStores;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A rogue R tries to speak as a process P towards a victim V, each its own JVM: P talks to R (a
 * QP of P's is connected to R), so P's fabric sends R a HELLO; R passes it on to V as it came,
 * then naming V as the listener it was sent to. V refuses both (the first names another
 * listener, the second P does not confirm: its nonce was bound to its connection to R), and P's
 * own traffic to V then lands intact. Plain, and under mutual TLS with a certificate V trusts.
 */
class RelayingRogueTest {
  private static final Duration T = Duration.ofSeconds(60);

  @Test
  void aRelayingRogueIsRefusedOnAPlainFabric() throws Exception {
    relayIsRefused("", "", SoftTls.from(RdmaSettings.from(ConfigFactory.empty())));
  }

  @Test
  void aRelayingRogueWithATrustedCertificateIsRefusedUnderMutualTls() throws Exception {
    TlsStores stores = TlsStores.get();
    SoftTls carol = SoftTls.from(RdmaSettings.from(ConfigFactory.parseString(
        stores.config(TlsStores.CAROL))));
    relayIsRefused(stores.config(TlsStores.ALICE), stores.config(TlsStores.BOB), carol);
  }

  private void relayIsRefused(String pConfig, String vConfig, SoftTls rogueTls)
      throws Exception {
    try (PeerJvm p = PeerJvm.start(pConfig);
        PeerJvm v = PeerJvm.start(vConfig);
        RelayingRogue r = new RelayingRogue(rogueTls)) {
      v.connect(p.gid, p.qpn, 17, 7); // V's QP takes P's requests
      p.connect(r.gid(1), 0x4242, 16, 7); // 8 tries of 268 ms: P tries R again while R relays
      p.process.send("WRITE 0 64 4096 1234 1"); // P's fabric connects to R, with a HELLO
      try (RelayingRogue.Caught as = r.awaitHello(20_000)) {
        FabricWire.Handshake answer = r.relay(as.hello(), v.fabric(), as.hello().to);
        assertEquals(FabricWire.REFUSED, answer.kind, "passed on as it came");
        assertEquals(FabricWire.RELAYED, answer.code);
      }
      try (RelayingRogue.Caught again = r.awaitHello(20_000)) { // P tries again: a new HELLO
        FabricWire.Handshake answer = r.relay(again.hello(), v.fabric(), v.fabric());
        assertEquals(FabricWire.REFUSED, answer.kind, "naming V as its listener");
        assertEquals(FabricWire.NOT_CONFIRMED, answer.code);
      }
      r.close();
      assertTrue(p.process.awaitLine("DONE ", T).startsWith("RETRY_EXC_ERR"),
          "P's request to R fails: R never welcomed it");
      awaitOutput(v, "relayed");
      awaitOutput(v, "did not confirm");
      // P's own traffic reaches V, intact and in place: no rogue took its PSNs
      p.connect(v.gid, v.qpn, 17, 7);
      p.ask("FILL 5", "FILLED", T);
      assertEquals("SUCCESS -", p.ask("WRITE 0 65536 " + v.address + " " + v.rkey + " 1",
          "DONE ", T));
      assertEquals(p.ask("SUM 0 65536", "SUM ", T), v.ask("SUM 0 65536", "SUM ", T),
          "what P wrote is in V's memory");
      p.ask("EXIT", "BYE", T);
      v.ask("EXIT", "BYE", T);
    }
  }

  private static void awaitOutput(PeerJvm peer, String text) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!peer.process.output().contains(text)) {
      assertTrue(System.nanoTime() < deadline, "the victim logs '" + text + "': "
          + peer.process.output());
      Thread.sleep(20);
    }
  }
}
