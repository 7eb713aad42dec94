package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.testing.TlsStores;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * Mutual TLS on the fabric between processes: trusted peers carry one-sided traffic as in the
 * clear; a process with an untrusted certificate, without TLS, or with a trusted certificate
 * that may not claim its address, reaches no memory, its requests end in RETRY_EXC_ERR naming
 * the peer, and the server logs one line refusing it.
 * Each side is its own JVM: the fabric is one per JVM, set up by the first provider.
 */
class FabricTlsTest {
  private static final Duration T = Duration.ofSeconds(60);
  private static final TlsStores STORES = TlsStores.get();

  @Test
  void trustedProcessesWriteAndReadEachOthersMemory() throws Exception {
    try (PeerJvm server = PeerJvm.start(STORES.config(TlsStores.ALICE));
        PeerJvm client = PeerJvm.start(STORES.config(TlsStores.BOB))) {
      // a first connection makes two TLS handshakes in JVMs that have not run TLS yet: on a
      // loaded machine, more than 4 tries of 67 ms
      server.connect(client.gid, client.qpn, 17, 7);
      client.connect(server.gid, server.qpn, 17, 7);
      client.ask("FILL 7", "FILLED", T);
      server.ask("FILL 8", "FILLED", T);
      String serverData = server.ask("SUM 1048576 65536", "SUM ", T);
      assertEquals("SUCCESS -", client.ask("WRITE 0 65536 " + server.address + " "
          + server.rkey + " 4", "DONE ", T));
      assertEquals(client.ask("SUM 0 65536", "SUM ", T), server.ask("SUM 0 65536", "SUM ", T),
          "what the client wrote is in the server's memory");
      assertEquals("SUCCESS -", client.ask("READ 2097152 65536 " + (server.address + 1048576)
          + " " + server.rkey, "DONE ", T));
      assertEquals(serverData, client.ask("SUM 2097152 65536", "SUM ", T),
          "what the client read is the server's");
      client.ask("EXIT", "BYE", T);
      server.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aProcessWithAnUntrustedCertificateReachesNothing() throws Exception {
    refused("", STORES.config(TlsStores.ROGUE), "TLS handshake");
  }

  @Test
  void aProcessWithoutTlsReachesNothing() throws Exception {
    refused("", "", "TLS handshake");
  }

  /** A trusted certificate speaks only for the addresses it may claim: here, none of bob's. */
  @Test
  void aTrustedProcessWhoseCertificateMayNotClaimItsAddressReachesNothing() throws Exception {
    refused("pekko-rdma.soft.tls.identities = [{ certificate = \"CN=bob, O=pekko-rdma tests\","
        + " addresses = [\"127.0.0.1:1\"] }]\n", STORES.config(TlsStores.BOB),
        "may claim only the addresses");
  }

  @Test
  void aFabricOnARoutableAddressWithoutTlsIsWarnedAboutNamingTheSetting() throws Exception {
    String everywhere = "pekko-rdma.soft.fabric { host = \"0.0.0.0\"\n"
        + "advertised-host = \"127.0.0.1\" }\n";
    try (PeerJvm clear = PeerJvm.start(everywhere);
        PeerJvm secured = PeerJvm.start(everywhere + STORES.config(TlsStores.ALICE))) {
      clear.ask("EXIT", "BYE", T);
      secured.ask("EXIT", "BYE", T);
      assertTrue(clear.process.output().contains("without TLS")
          && clear.process.output().contains("pekko-rdma.soft.tls.enabled"),
          clear.process.output());
      assertTrue(!secured.process.output().contains("without TLS"), secured.process.output());
    }
  }

  private void refused(String serverConfig, String clientConfig, String why) throws Exception {
    try (PeerJvm server = PeerJvm.start(STORES.config(TlsStores.ALICE) + serverConfig);
        PeerJvm client = PeerJvm.start(clientConfig)) {
      server.connect(client.gid, client.qpn, 14, 3);
      client.connect(server.gid, server.qpn, 14, 2);
      String before = server.ask("SUM 0 65536", "SUM ", T);
      client.ask("FILL 9", "FILLED", T);
      String outcome = client.ask("WRITE 0 65536 " + server.address + " " + server.rkey + " 1",
          "DONE ", T);
      assertTrue(outcome.startsWith("RETRY_EXC_ERR") && outcome.contains(server.fabric().toString()),
          "the requester fails naming the process it could not reach: " + outcome);
      assertEquals(before, server.ask("SUM 0 65536", "SUM ", T), "nothing was written");
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (!(server.process.output().contains("soft fabric refused")
          && server.process.output().contains(why))) {
        assertTrue(System.nanoTime() < deadline, "the server logs the refusal: "
            + server.process.output());
        Thread.sleep(20);
      }
      client.ask("EXIT", "BYE", T);
      server.ask("EXIT", "BYE", T);
    }
  }
}
