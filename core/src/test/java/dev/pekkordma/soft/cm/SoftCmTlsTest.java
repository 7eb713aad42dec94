package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.conformance.PeerProcess;
import dev.pekkordma.testing.TlsStores;
import dev.pekkordma.verbs.RdmaProvider;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The software CM over mutual TLS: between two processes, and between providers of one JVM
 * configured as different identities (the CM's connections are real TCP either way): trusted
 * peers connect, an untrusted certificate or a peer without TLS is refused with one warning
 * naming it while the listener goes on serving, and a CM exposed without TLS is warned about.
 * The test's own provider (from {@link CmFixture}) has TLS off.
 */
class SoftCmTlsTest extends CmFixture {
  private static final Duration STARTUP = Duration.ofSeconds(120);
  private static final int EPROTO = -71;
  private static final int ECONNRESET = -104;
  private final List<RdmaProvider> identities = new ArrayList<>();
  private LogCapture logs;

  @BeforeEach
  void captureLogs() {
    logs = new LogCapture();
  }

  @AfterEach
  void closeIdentities() {
    logs.close();
    for (RdmaProvider p : identities) p.close();
  }

  /** A provider presenting {@code identity}'s certificate; closed after the test. */
  private RdmaProvider as(String identity) {
    RdmaProvider p = newProvider(TlsStores.get().config(identity));
    identities.add(p);
    return p;
  }

  private static byte[] text(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /** Connects from {@code p} to {@code at}, expects the accept's private data, disconnects. */
  private static void connectAndDisconnect(RdmaProvider p, InetSocketAddress at, String data,
      CmEventChannel server) {
    CmEventChannel ch = p.createCmEventChannel();
    CmId c = resolved(ch, at);
    c.connect(ConnectionParameters.withPrivateData(text("hello")));
    CmId request = null;
    if (server != null) {
      CmEvent req = expect(server, CmEventType.CONNECT_REQUEST);
      assertArrayEquals(text("hello"), req.privateData());
      request = req.id();
      request.accept(ConnectionParameters.withPrivateData(text(data)));
    }
    assertArrayEquals(text(data), expect(ch, CmEventType.ESTABLISHED).privateData());
    if (server != null) expect(server, CmEventType.ESTABLISHED);
    c.disconnect();
    expect(ch, CmEventType.DISCONNECTED);
    if (request != null) {
      expect(server, CmEventType.DISCONNECTED);
      request.close();
    }
    c.close();
    ch.close();
  }

  /** A connection from {@code p} to {@code at} that fails; returns its local port. */
  /**
   * A connect to {@code at} that fails with one of {@code status}; returns what the listener's
   * refusal names: its own address (the client's link has a port of its own, not the id's).
   */
  private static String refusedConnection(RdmaProvider p, InetSocketAddress at,
      Set<Integer> status) {
    CmEventChannel ch = p.createCmEventChannel();
    CmId c = resolved(ch, at);
    c.connect(ConnectionParameters.defaults());
    CmEvent e = expect(ch, CmEventType.CONNECT_ERROR);
    assertTrue(status.contains(e.status()), "status " + e.status() + ", expected one of " + status);
    c.close();
    ch.close();
    return "listener 127.0.0.1:" + at.getPort() + ": refused connection from 127.0.0.1:";
  }

  private static CmId listenerOf(RdmaProvider p, CmEventChannel ch, String host) {
    CmId id = ch.createId("listener");
    id.bind(new InetSocketAddress(host, 0));
    id.listen(8);
    return id;
  }

  @Test
  void twoTrustedIdentitiesConnect() {
    RdmaProvider alice = as(TlsStores.ALICE);
    CmEventChannel server = alice.createCmEventChannel();
    CmId listener = listenerOf(alice, server, "127.0.0.1");
    connectAndDisconnect(as(TlsStores.BOB), listener.localAddress(), "welcome", server);
    assertEquals(List.of(), logs.warnings(), "nothing refused, nothing in the clear");
    listener.close();
    server.close();
  }

  @Test
  void anUntrustedClientIsRefusedAndTheListenerServesTheNext() {
    RdmaProvider alice = as(TlsStores.ALICE);
    CmEventChannel server = alice.createCmEventChannel();
    CmId listener = listenerOf(alice, server, "127.0.0.1");
    String rogue = refusedConnection(as(TlsStores.ROGUE), listener.localAddress(),
        Set.of(EPROTO, ECONNRESET));
    String line = logs.await(w -> w.contains(rogue), WAIT, "refusing the rogue");
    assertTrue(line.contains("'CN=rogue,O=pekko-rdma tests' is not trusted here"), line);
    assertNull(server.awaitEvent(Duration.ofMillis(50)), "the application saw nothing of it");
    connectAndDisconnect(as(TlsStores.BOB), listener.localAddress(), "next", server);
    listener.close();
    server.close();
  }

  @Test
  void anUntrustedServerIsRefusedByTheClient() {
    RdmaProvider rogue = as(TlsStores.ROGUE);
    CmEventChannel server = rogue.createCmEventChannel();
    CmId listener = listenerOf(rogue, server, "127.0.0.1");
    refusedConnection(as(TlsStores.ALICE), listener.localAddress(), Set.of(EPROTO));
    String peer = "127.0.0.1:" + listener.localAddress().getPort();
    String line = logs.await(w -> LogCapture.names(w, peer) && w.contains("connecting to"), WAIT,
        "the client refusing the server");
    assertTrue(line.contains("'CN=rogue,O=pekko-rdma tests' is not trusted here"), line);
    assertNull(server.awaitEvent(Duration.ofMillis(50)));
    listener.close();
    server.close();
  }

  @Test
  void aPlainClientIsRefusedByATlsListener() {
    RdmaProvider alice = as(TlsStores.ALICE);
    CmEventChannel server = alice.createCmEventChannel();
    CmId listener = listenerOf(alice, server, "127.0.0.1");
    String plain =
        refusedConnection(provider, listener.localAddress(), Set.of(EPROTO, ECONNRESET));
    String line = logs.await(w -> w.contains(plain), WAIT, "refusing the plain client");
    assertTrue(line.contains("does not speak TLS"), line);
    assertNull(server.awaitEvent(Duration.ofMillis(50)));
    connectAndDisconnect(as(TlsStores.BOB), listener.localAddress(), "next", server);
    listener.close();
    server.close();
  }

  @Test
  void aTlsClientIsRefusedByAPlainListener() {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    String client =
        refusedConnection(as(TlsStores.ALICE), listener.localAddress(), Set.of(EPROTO));
    String line = logs.await(w -> w.contains(client), WAIT, "refusing the TLS client");
    assertTrue(line.contains("pekko-rdma.soft.tls.enabled on, this process off"), line);
    listener.close();
  }

  @Test
  void listeningOnOrConnectingToARoutableAddressWithoutTlsIsWarnedAboutOnce() {
    CmEventChannel server = channel();
    CmId any = listenerOf(provider, server, "0.0.0.0");
    String warning = logs.await(w -> w.contains("listening on 0.0.0.0:"), WAIT, "in the clear");
    assertTrue(warning.contains("without TLS") && warning.contains("pekko-rdma.soft.tls.enabled"),
        warning);
    CmId again = listenerOf(provider, server, "0.0.0.0");
    assertEquals(1, logs.warnings().size(), "once per provider: " + logs.warnings());
    CmId loopback = listener(server);
    connectAndDisconnect(provider, loopback.localAddress(), "x", server);
    assertEquals(1, logs.warnings().size(), "loopback is not warned about: " + logs.warnings());

    // TLS on: no warning at all
    RdmaProvider alice = as(TlsStores.ALICE);
    CmEventChannel tlsServer = alice.createCmEventChannel();
    CmId tlsAny = listenerOf(alice, tlsServer, "0.0.0.0");
    assertEquals(1, logs.warnings().size(), logs.warnings().toString());

    // a provider that connects to this machine's own routable address, when it has one
    InetAddress routable = routableAddress();
    if (routable != null) {
      RdmaProvider other = newProvider("");
      identities.add(other);
      connectAndDisconnect(other, new InetSocketAddress(routable, any.localAddress().getPort()),
          "y", server);
      String connecting = logs.await(w -> w.contains("connecting to "
          + routable.getHostAddress()), WAIT, "connecting in the clear");
      assertTrue(connecting.contains("pekko-rdma.soft.tls.enabled"), connecting);
    } else {
      System.out.println("[SoftCmTlsTest] no routable local address: the connecting half skipped");
    }
    tlsAny.close();
    tlsServer.close();
    loopback.close();
    again.close();
    any.close();
  }

  private static InetAddress routableAddress() {
    try {
      for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (!nif.isUp() || nif.isLoopback()) continue;
        for (InetAddress a : Collections.list(nif.getInetAddresses())) {
          if (a instanceof Inet4Address && !a.isLinkLocalAddress()) return a;
        }
      }
    } catch (SocketException e) {
      // none then
    }
    return null;
  }

  @Test
  void mutualTlsBetweenTwoProcesses() throws Exception {
    TlsStores stores = TlsStores.get();
    try (PeerProcess peer = PeerProcess.start(TlsCmPeerMain.class, stores.config(TlsStores.ALICE),
        "2")) {
      try {
        int port = Integer.parseInt(peer.awaitLine("LISTENING ", STARTUP));
        InetSocketAddress at = new InetSocketAddress("127.0.0.1", port);
        connectAndDisconnect(as(TlsStores.BOB), at, "served 1", null);
        peer.awaitLine("SERVED 1", WAIT);
        awaitOutput(peer, "presenting CN=bob");

        String refused = refusedConnection(as(TlsStores.ROGUE), at, Set.of(EPROTO, ECONNRESET));
        String refusedRogue = awaitOutput(peer, "is not trusted here");
        assertTrue(refusedRogue.contains(refused)
            && refusedRogue.contains("'CN=rogue,O=pekko-rdma tests'"), refusedRogue);
        refusedConnection(provider, at, Set.of(EPROTO, ECONNRESET));
        String refusedPlain = awaitOutput(peer, "does not speak TLS");
        assertTrue(refusedPlain.contains(refused), refusedPlain);

        // the listener still serves a trusted client
        connectAndDisconnect(as(TlsStores.BOB), at, "served 2", null);
        peer.awaitLine("SERVED 2", WAIT);
        peer.awaitLine("PEER OK", WAIT);
        assertEquals(0, peer.awaitExit(WAIT));
      } catch (AssertionError | RuntimeException e) {
        throw peer.withOutput(e);
      }
    }
  }

  /** The first line of the peer's output containing {@code text}, once it has come. */
  private static String awaitOutput(PeerProcess peer, String text) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      for (String line : peer.output().split("\n")) if (line.contains(text)) return line;
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the peer logged no '" + text + "' within " + WAIT);
      }
      LockSupport.parkNanos(10_000_000);
    }
  }
}
