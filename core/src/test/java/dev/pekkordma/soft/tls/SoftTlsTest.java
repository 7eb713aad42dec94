package dev.pekkordma.soft.tls;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.testing.TlsStores;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** SoftTls over a pair of loopback sockets: who gets in, who does not, and how fast it says so. */
class SoftTlsTest {
  private ServerSocket server;
  private Socket clientSide;
  private Socket serverSide;

  private static SoftTls tls(String identity, String more) {
    return SoftTls.from(RdmaSettings.from(ConfigFactory.parseString(
        TlsStores.get().config(identity) + more)));
  }

  private static SoftTls tls(String identity) {
    return tls(identity, "");
  }

  @BeforeEach
  void connect() throws IOException {
    server = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
    clientSide = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
    serverSide = server.accept();
  }

  @AfterEach
  void close() throws IOException {
    clientSide.close();
    serverSide.close();
    server.close();
  }

  /** Runs the client's handshake beside the server's; returns the client's outcome. */
  private CompletableFuture<Socket> clientHandshake(SoftTls tls) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        Socket s = tls.client(clientSide, "server under test");
        // TLS 1.3 tells a client that its certificate was refused only when it reads
        s.getOutputStream().write(1);
        s.getOutputStream().flush();
        if (s.getInputStream().read() != 2) throw new IOException("no answer");
        return s;
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    });
  }

  private static Throwable failure(CompletableFuture<Socket> f) throws Exception {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> f.get(10, TimeUnit.SECONDS));
    return e.getCause().getCause() != null ? e.getCause().getCause() : e.getCause();
  }

  @Test
  void disabledHandsTheSocketBack() throws IOException {
    SoftTls off = SoftTls.from(RdmaSettings.from(ConfigFactory.empty()));
    assertFalse(off.enabled());
    assertSame(clientSide, off.client(clientSide, "x"));
    assertSame(serverSide, off.server(serverSide, "x"));
    assertEquals("no TLS", SoftTls.peerIdentity(serverSide));
  }

  @Test
  void twoTrustedIdentitiesShakeHandsAndSeeEachOther() throws Exception {
    CompletableFuture<Socket> client = clientHandshake(tls(TlsStores.ALICE));
    Socket s = tls(TlsStores.BOB).server(serverSide, "client under test");
    assertTrue(s instanceof SSLSocket);
    assertEquals(1, s.getInputStream().read());
    s.getOutputStream().write(2);
    s.getOutputStream().flush();
    Socket c = client.get(10, TimeUnit.SECONDS);
    assertTrue(SoftTls.peerIdentity(s).contains("CN=alice"), SoftTls.peerIdentity(s));
    assertTrue(SoftTls.peerIdentity(c).contains("CN=bob"), SoftTls.peerIdentity(c));
    assertEquals("TLSv1.3", ((SSLSocket) s).getSession().getProtocol());
  }

  @Test
  void anUntrustedClientIsRefusedNamingItAndWhy() throws Exception {
    CompletableFuture<Socket> client = clientHandshake(tls(TlsStores.ROGUE));
    IOException e = assertThrows(IOException.class,
        () -> tls(TlsStores.BOB).server(serverSide, "client under test"));
    assertTrue(e.getMessage().contains("client under test")
        && e.getMessage().contains("not trusted"), e.getMessage());
    assertTrue(serverSide.isClosed(), "the refused connection is closed");
    Throwable c = failure(client);
    assertTrue(c instanceof IOException, String.valueOf(c));
  }

  @Test
  void anUntrustedServerIsRefusedByTheClient() throws Exception {
    CompletableFuture<Socket> client = clientHandshake(tls(TlsStores.ALICE));
    assertThrows(IOException.class, () -> tls(TlsStores.ROGUE).server(serverSide, "client"));
    Throwable c = failure(client);
    assertTrue(c.getMessage().contains("server under test") && c.getMessage().contains("not trusted"),
        c.getMessage());
  }

  @Test
  void aPlainPeerIsRefused() throws Exception {
    OutputStream out = clientSide.getOutputStream();
    out.write(new byte[] {0, 0, 0, 39, 0x73, 0x43, 0x4d, 0x31, 1}); // a CM REQ's first bytes
    out.flush();
    IOException e = assertThrows(IOException.class,
        () -> tls(TlsStores.BOB).server(serverSide, "plain client"));
    assertTrue(e.getMessage().contains("plain client")
        && e.getMessage().contains("does not speak TLS"), e.getMessage());
  }

  @Test
  void withoutMutualAuthenticationAnyClientGetsIn() throws Exception {
    CompletableFuture<Socket> client = clientHandshake(tls(TlsStores.ROGUE));
    Socket s = tls(TlsStores.BOB, "pekko-rdma.soft.tls.require-mutual-authentication = off")
        .server(serverSide, "client");
    assertEquals(1, s.getInputStream().read());
    s.getOutputStream().write(2);
    s.getOutputStream().flush();
    client.get(10, TimeUnit.SECONDS);
    assertEquals("no certificate", SoftTls.peerIdentity(s));
  }

  @Test
  void aSilentPeerIsGivenUpAfterTheHandshakeTimeout() {
    long start = System.nanoTime();
    IOException e = assertThrows(IOException.class, () -> tls(TlsStores.BOB,
        "pekko-rdma.soft.tls.handshake-timeout = 300ms").server(serverSide, "silent client"));
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(e.getMessage().contains("silent client")
        && e.getMessage().contains("pekko-rdma.soft.tls.handshake-timeout"), e.getMessage());
    assertTrue(ms >= 250 && ms < 3000, "gave up after " + ms + " ms");
  }

  @Test
  void aTricklingPeerIsGivenUpAfterTheHandshakeTimeoutToo() throws Exception {
    // a TLS record header announcing 16 KiB, then a byte every 100 ms: each read gets something
    CompletableFuture<Void> trickle = CompletableFuture.runAsync(() -> {
      try {
        OutputStream out = clientSide.getOutputStream();
        out.write(new byte[] {0x16, 0x03, 0x01, 0x40, 0x00});
        for (int i = 0; i < 100; i++) {
          out.write(1);
          out.flush();
          Thread.sleep(100);
        }
      } catch (IOException | InterruptedException e) {
        // the server gave up on us: expected
      }
    });
    long start = System.nanoTime();
    IOException e = assertThrows(IOException.class, () -> tls(TlsStores.BOB,
        "pekko-rdma.soft.tls.handshake-timeout = 500ms").server(serverSide, "trickling client"));
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(e.getMessage().contains("did not finish within 500 ms"), e.getMessage());
    assertTrue(ms < 3000, "gave up after " + ms + " ms");
    // the trickle would last 10 s; the closed connection stops its writes long before
    trickle.get(5, TimeUnit.SECONDS);
  }
}
