package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A hostile peer on a raw TCP socket against a listening id and against a connecting one: each
 * attack is refused with one warning naming the peer, our threads stay bounded, and a
 * legitimate connection still completes on the same listener afterwards.
 */
class HostileCmPeerTest extends CmFixture {
  private static final byte[] NOTHING = new byte[0];
  private LogCapture logs;
  private int threadsBefore;

  @BeforeEach
  void captureLogs() {
    logs = new LogCapture();
    threadsBefore = threads();
  }

  /** Idle pool threads may stay a while, but no attack leaves more than a handful. */
  @AfterEach
  void stopCapturing() {
    logs.close();
    int after = threads();
    assertTrue(after <= threadsBefore + 16, "threads went from " + threadsBefore + " to " + after);
  }

  static int threads() {
    return ManagementFactory.getThreadMXBean().getThreadCount();
  }

  static String peerOf(Socket s) {
    return "127.0.0.1:" + s.getLocalPort();
  }

  static Socket raw(CmId listener) throws IOException {
    Socket s = new Socket();
    s.connect(listener.localAddress(), 5000);
    s.setSoTimeout((int) WAIT.toMillis());
    return s;
  }

  /** Reads until the other side closes (or resets); fails if it stays open past WAIT. */
  static void awaitClosedByPeer(Socket s) {
    try {
      InputStream in = s.getInputStream();
      while (in.read() >= 0) {
        // whatever it sends before closing
      }
    } catch (SocketTimeoutException e) {
      fail("the connection from " + peerOf(s) + " is still open after " + WAIT);
    } catch (IOException e) {
      // a reset: closed as well
    }
  }

  static void send(Socket s, byte[]... frames) {
    try {
      OutputStream out = s.getOutputStream();
      for (byte[] f : frames) out.write(f);
      out.flush();
    } catch (IOException e) {
      // the listener may have hung up already
    }
  }

  /** Exactly one warning names the peer and it says {@code why}. */
  private String refusedOnce(Socket s, String why) {
    List<String> lines = logs.naming(peerOf(s));
    assertEquals(1, lines.size(), "warnings naming " + peerOf(s) + ": " + lines);
    assertTrue(lines.get(0).contains(why), lines.get(0));
    return lines.get(0);
  }

  /** A connection from a CM id completes on {@code listener}, and everything of it goes. */
  private void aLegitimateConnectionCompletes(CmEventChannel server, CmId listener) {
    byte[] legit = "legit".getBytes(StandardCharsets.US_ASCII);
    assertArrayEquals(legit, connectOnceAndEnd(channel(), server, listener, legit));
  }

  private void refusedBeforeAnyRequest(byte[] bytes, String why) throws IOException {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = raw(listener)) {
      send(s, bytes);
      awaitClosedByPeer(s);
      refusedOnce(s, why);
    }
    expectNone(server, Duration.ofMillis(50));
    aLegitimateConnectionCompletes(server, listener);
    listener.close();
  }

  @Test
  void garbageBeforeTheMagicIsRefused() throws IOException {
    // bytes before a valid REQ: its length prefix is read from the garbage
    refusedBeforeAnyRequest(Frames.concat("xyz".getBytes(StandardCharsets.US_ASCII),
        Frames.validReq()), "CM frame of");
    // a length that fits, then garbage where the magic is due
    byte[] req = Frames.validReq();
    byte[] shifted = Frames.withLength(req.length - 4,
        Frames.concat(new byte[] {'j', 'u', 'n', 'k'}, Arrays.copyOfRange(req, 4, req.length - 4)));
    refusedBeforeAnyRequest(shifted, "not a soft CM peer");
  }

  @Test
  void aLengthOfTwoToTheThirtyOneMinusOneIsRefusedAtOnce() throws IOException {
    long start = System.nanoTime();
    refusedBeforeAnyRequest(Frames.withLength(Integer.MAX_VALUE, new byte[64]),
        "CM frame of 2147483647 bytes");
    assertTrue(System.nanoTime() - start < Duration.ofSeconds(3).toNanos(),
        "refused without waiting for the bytes");
  }

  @Test
  void aNegativeLengthIsRefused() throws IOException {
    refusedBeforeAnyRequest(Frames.withLength(-1, new byte[64]), "CM frame of -1 bytes");
    refusedBeforeAnyRequest(Frames.withLength(Integer.MIN_VALUE, NOTHING),
        "CM frame of -2147483648 bytes");
  }

  @Test
  void aTlsClientHelloOnAPlainListenerIsRefusedSayingSo() throws IOException {
    refusedBeforeAnyRequest(new byte[] {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01},
        "pekko-rdma.soft.tls.enabled on, this process off");
  }

  @Test
  void aRequestTrickledOneBytePerSecondIsRefusedAtTheConnectTimeout() throws Exception {
    // a read timeout alone would take each byte as a sign of life: 39 bytes, 39 seconds
    try (RdmaProvider slow = newProvider("pekko-rdma.cm.connect-timeout = 2s")) {
      CmEventChannel server = slow.createCmEventChannel();
      CmId listener = listener(server);
      byte[] req = Frames.validReq();
      long start = System.nanoTime();
      try (Socket s = raw(listener)) {
        CompletableFuture<Void> trickle = CompletableFuture.runAsync(() -> {
          try {
            for (byte b : req) {
              s.getOutputStream().write(b);
              s.getOutputStream().flush();
              Thread.sleep(1000);
            }
          } catch (IOException | InterruptedException e) {
            // refused: the socket is gone
          }
        });
        awaitClosedByPeer(s);
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms >= 1900 && ms < 4500, "refused after " + ms + " ms");
        refusedOnce(s, "no valid REQ within 2000 ms (pekko-rdma.cm.connect-timeout)");
        trickle.cancel(true);
      }
      assertNull(server.awaitEvent(Duration.ofMillis(50)), "no request reached the application");
      CmEventChannel client = slow.createCmEventChannel();
      CmId c = resolved(client, listener.localAddress());
      c.connect(ConnectionParameters.defaults());
      CmId request = expect(server, CmEventType.CONNECT_REQUEST).id();
      request.reject(null);
      expect(client, CmEventType.REJECTED);
      request.close();
      c.close();
      client.close();
      listener.close();
      server.close();
    }
  }

  @Test
  void aThousandConnectionsThatNeverSpeakAreBoundedAndRefusedEachOnce() throws Exception {
    int pendingMax = 8;
    int connectionsMax = 24;
    try (RdmaProvider bounded = newProvider("pekko-rdma.cm.max-pending-handshakes = "
        + pendingMax + "\npekko-rdma.cm.max-connections = " + connectionsMax)) {
      CmEventChannel server = bounded.createCmEventChannel();
      CmId listener = server.createId("listener");
      listener.bind(LOOPBACK_ANY_PORT);
      listener.listen(0); // the default TCP backlog: the kernel queues what we have not taken
      int before = threads();
      List<Socket> silent = new ArrayList<>();
      int peak = before;
      try {
        for (int i = 0; i < 1000; i++) {
          silent.add(raw(listener));
          if (i % 50 == 0) peak = Math.max(peak, threads());
        }
        peak = Math.max(peak, threads());
        // every one of them is refused: at once past the cap, or at the REQ's deadline
        for (Socket s : silent) awaitClosedByPeer(s);
        peak = Math.max(peak, threads());
        assertTrue(peak <= before + connectionsMax + 4, "threads went from " + before + " to "
            + peak);
        int capped = 0;
        for (Socket s : silent) {
          String line = refusedOnce(s, "");
          if (line.contains("pekko-rdma.cm.max-pending-handshakes")) capped++;
          else assertTrue(line.contains("no valid REQ within"), line);
        }
        // the rest were refused at their deadline, freeing their slots for later ones
        assertTrue(capped >= 1, capped + " refused by the cap");
        assertEquals(0, ((SoftCmId) listener).pendingHandshakes(), "no slot is left taken");
      } finally {
        for (Socket s : silent) s.close();
      }
      CmEventChannel client = bounded.createCmEventChannel();
      CmId c = resolved(client, listener.localAddress());
      c.connect(ConnectionParameters.defaults());
      CmId request = expect(server, CmEventType.CONNECT_REQUEST).id();
      request.accept(ConnectionParameters.defaults());
      expect(client, CmEventType.ESTABLISHED);
      request.close();
      expect(client, CmEventType.DISCONNECTED);
      c.close();
      listener.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), bounded.liveResources());
      client.close();
      server.close();
    }
  }

  /**
   * Peers that take every pending place (silent, or trickling a REQ a byte at a time) cannot
   * keep a legitimate connection out: it takes the place of the one that waited longest, at once.
   */
  @Test
  void peersHoldingEveryPendingPlaceCannotKeepALegitimateConnectionOut() throws Exception {
    try (RdmaProvider bounded = newProvider("pekko-rdma.cm.max-pending-handshakes = 4\n"
        + "pekko-rdma.cm.connect-timeout = 20s")) {
      CmEventChannel server = bounded.createCmEventChannel();
      CmId listener = server.createId("listener");
      listener.bind(LOOPBACK_ANY_PORT);
      listener.listen(0);
      List<Socket> slow = new ArrayList<>();
      try {
        for (int i = 0; i < 4; i++) {
          slow.add(raw(listener));
          if (i % 2 == 1) send(slow.get(i), new byte[] {0, 0}); // half a frame's length, no more
        }
        waitUntil(() -> ((SoftCmId) listener).pendingHandshakes() == 4, "four pending");
        long start = System.nanoTime();
        CmEventChannel client = bounded.createCmEventChannel();
        CmId c = resolved(client, listener.localAddress());
        c.connect(ConnectionParameters.defaults());
        CmId request = expect(server, CmEventType.CONNECT_REQUEST).id();
        assertTrue(System.nanoTime() - start < 5_000_000_000L, "at once, not after 20 s");
        request.accept(ConnectionParameters.defaults());
        expect(client, CmEventType.ESTABLISHED);
        awaitClosedByPeer(slow.get(0)); // the one that waited longest made room
        refusedOnce(slow.get(0), "pekko-rdma.cm.max-pending-handshakes");
        request.close();
        expect(client, CmEventType.DISCONNECTED);
        c.close();
        client.close();
      } finally {
        for (Socket s : slow) s.close();
      }
      listener.close();
      server.close();
    }
  }

  @Test
  void pastMaxConnectionsConnectFailsAndAListenerRefusesNamingTheSetting() throws Exception {
    try (RdmaProvider bounded = newProvider("pekko-rdma.cm.max-connections = 2\n"
        + "pekko-rdma.cm.connect-timeout = 3s")) {
      CmEventChannel server = bounded.createCmEventChannel();
      CmId listener = listener(server);
      try (Socket a = raw(listener); Socket b = raw(listener)) {
        // two silent connections hold both threads until their REQ is due
        waitUntil(() -> ((SoftCmId) listener).pendingHandshakes() == 2, "two pending");
        try (Socket third = raw(listener)) {
          awaitClosedByPeer(third);
          refusedOnce(third, "2 CM connections are open already (pekko-rdma.cm.max-connections)");
        }
        CmEventChannel client = bounded.createCmEventChannel();
        CmId c = resolved(client, listener.localAddress());
        RdmaException e = assertThrows(RdmaException.class,
            () -> c.connect(ConnectionParameters.defaults()));
        assertEquals(RdmaException.EAGAIN, e.errno());
        assertTrue(e.getMessage().contains("pekko-rdma.cm.max-connections"), e.getMessage());
        c.close();
        client.close();
      }
      // the silent two gone, their threads serve a legitimate connection
      waitUntil(() -> ((SoftCmId) listener).pendingHandshakes() == 0, "none pending");
      CmEventChannel client = bounded.createCmEventChannel();
      CmId c = resolved(client, listener.localAddress());
      c.connect(ConnectionParameters.defaults());
      CmId request = expect(server, CmEventType.CONNECT_REQUEST).id();
      request.reject(null);
      expect(client, CmEventType.REJECTED);
      request.close();
      c.close();
      client.close();
      listener.close();
      server.close();
    }
  }

  // ---- frames in the wrong state

  /** A request from a raw socket, its CONNECT_REQUEST taken; accepted if {@code accept}. */
  private CmId requestFrom(Socket s, CmEventChannel server, boolean accept) throws IOException {
    send(s, Frames.validReq());
    CmId id = expect(server, CmEventType.CONNECT_REQUEST).id();
    if (accept) {
      id.accept(ConnectionParameters.defaults());
      assertEquals(Frames.REP, Frames.readKind(s.getInputStream()));
    }
    return id;
  }

  @Test
  void aRepBeforeTheApplicationAnsweredIsRefused() throws IOException {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = raw(listener)) {
      CmId id = requestFrom(s, server, false);
      send(s, Frames.connect(Frames.REP, 1, 1, 5, 7, 7, NOTHING));
      assertEquals(-71, expect(server, CmEventType.CONNECT_ERROR).status(), "EPROTO");
      awaitClosedByPeer(s);
      refusedOnce(s, "unexpected REP in state CONNECT_REQUEST");
      id.close();
    }
    aLegitimateConnectionCompletes(server, listener);
    listener.close();
  }

  @Test
  void aDreqInsteadOfTheRtuIsRefused() throws IOException {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = raw(listener)) {
      CmId id = requestFrom(s, server, true);
      send(s, Frames.bare(Frames.DREQ));
      assertEquals(-71, expect(server, CmEventType.CONNECT_ERROR).status());
      awaitClosedByPeer(s);
      refusedOnce(s, "unexpected DREQ in state ACCEPTING");
      id.close();
    }
    aLegitimateConnectionCompletes(server, listener);
    listener.close();
  }

  @Test
  void anRtuOnAnEstablishedConnectionEndsIt() throws IOException {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = raw(listener)) {
      CmId id = requestFrom(s, server, true);
      send(s, Frames.bare(Frames.RTU));
      expect(server, CmEventType.ESTABLISHED);
      send(s, Frames.bare(Frames.RTU));
      expect(server, CmEventType.DISCONNECTED);
      awaitClosedByPeer(s);
      refusedOnce(s, "unexpected RTU in state ESTABLISHED");
      id.close();
    }
    aLegitimateConnectionCompletes(server, listener);
    listener.close();
  }

  @Test
  void aRejWithOversizedPrivateDataIsRefusedOnBothSides() throws IOException {
    byte[] oversized = Frames.rej(28, new byte[255]); // 255 > 148, all of it sent
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = raw(listener)) {
      CmId id = requestFrom(s, server, false);
      send(s, oversized);
      assertEquals(-71, expect(server, CmEventType.CONNECT_ERROR).status());
      awaitClosedByPeer(s);
      refusedOnce(s, "REJ with 255 bytes of private data (at most 148)");
      id.close();
    }
    aLegitimateConnectionCompletes(server, listener);
    listener.close();

    try (FakeServer fake = new FakeServer()) {
      CmEventChannel client = channel();
      CmId c = resolved(client, fake.address());
      c.connect(ConnectionParameters.defaults());
      try (Socket s = fake.acceptRequest()) {
        send(s, oversized);
        assertEquals(-71, expect(client, CmEventType.CONNECT_ERROR).status());
        awaitClosedByPeer(s);
      }
      List<String> lines = logs.naming(fake.peer());
      assertEquals(1, lines.size(), lines.toString());
      assertTrue(lines.get(0).contains("REJ with 255 bytes of private data"), lines.get(0));
      c.close();
    }
  }

  @Test
  void framesOutOfOrderFromAServerAreRefusedByTheConnectingId() throws IOException {
    for (int kind : new int[] {Frames.RTU, Frames.DREQ, Frames.DREP, Frames.REQ}) {
      byte[] frame = kind == Frames.REQ ? Frames.validReq() : Frames.bare(kind);
      try (FakeServer fake = new FakeServer()) {
        CmEventChannel client = channel();
        CmId c = resolved(client, fake.address());
        c.connect(ConnectionParameters.defaults());
        try (Socket s = fake.acceptRequest()) {
          send(s, frame);
          assertEquals(-71, expect(client, CmEventType.CONNECT_ERROR).status(), "kind " + kind);
          awaitClosedByPeer(s);
        }
        List<String> lines = logs.naming(fake.peer());
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.get(0).contains("in state CONNECTING"), lines.get(0));
        c.close();
      }
    }
  }

  @Test
  void aStreamOfDreqsThatIsNeverReadCannotBlockTheApplication() throws Exception {
    CmEventChannel server = channel();
    CmId listener = listener(server);
    try (Socket s = new Socket()) {
      s.setReceiveBufferSize(4096); // we never read: our DREPs would fill this, then theirs
      s.connect(listener.localAddress(), 5000);
      s.setSoTimeout((int) WAIT.toMillis());
      CmId id = requestFrom(s, server, true);
      send(s, Frames.bare(Frames.RTU));
      expect(server, CmEventType.ESTABLISHED);
      // enough that the DREPs answering them could not all fit in the sockets' buffers
      byte[] dreq = Frames.bare(Frames.DREQ);
      byte[] dreqs = new byte[dreq.length * 1_000_000];
      for (int i = 0; i < 1_000_000; i++) {
        System.arraycopy(dreq, 0, dreqs, i * dreq.length, dreq.length);
      }
      CompletableFuture<Void> flood = CompletableFuture.runAsync(() -> send(s, dreqs));
      expect(server, CmEventType.DISCONNECTED);
      logs.await(w -> LogCapture.names(w, peerOf(s)) && w.contains("unexpected DREQ"),
          WAIT, "refusing the third DREQ");
      // the application's calls do not wait on a peer that does not read
      CompletableFuture<Void> close = CompletableFuture.runAsync(id::close);
      close.get(5, TimeUnit.SECONDS);
      flood.get(10, TimeUnit.SECONDS);
      refusedOnce(s, "unexpected DREQ in state DISCONNECTED");
    }
    aLegitimateConnectionCompletes(server, listener);
    listener.close();
  }

  static void waitUntil(java.util.function.BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) fail("not " + what + " within " + WAIT);
      LockSupport.parkNanos(2_000_000);
    }
  }

  /** A TCP server that plays a CM listener badly: it reads a REQ and answers as told. */
  static final class FakeServer implements AutoCloseable {
    private final ServerSocket socket;

    FakeServer() throws IOException {
      socket = new ServerSocket(0, 50, LOOPBACK_ANY_PORT.getAddress());
      socket.setSoTimeout((int) WAIT.toMillis());
    }

    InetSocketAddress address() {
      return new InetSocketAddress(LOOPBACK_ANY_PORT.getAddress(), socket.getLocalPort());
    }

    /** How the connecting side's logs name this server. */
    String peer() {
      return "127.0.0.1:" + socket.getLocalPort();
    }

    /** The next connection, its REQ read. */
    Socket acceptRequest() throws IOException {
      Socket s = socket.accept();
      s.setSoTimeout((int) WAIT.toMillis());
      assertEquals(Frames.REQ, Frames.readKind(s.getInputStream()));
      return s;
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
