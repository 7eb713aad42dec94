package dev.pekkordma.samples.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Our rc-pingpong and rping against themselves on the software provider, in one JVM. */
@Timeout(120)
class InteropSamplesTest {
  private static final ResourceCounts NONE = new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0);
  private final ByteArrayOutputStream serverOutput = new ByteArrayOutputStream();
  private final ByteArrayOutputStream clientOutput = new ByteArrayOutputStream();
  private final PrintStream serverOut = new PrintStream(serverOutput, true, StandardCharsets.UTF_8);
  private final PrintStream clientOut = new PrintStream(clientOutput, true, StandardCharsets.UTF_8);

  private static RdmaProvider soft() {
    return RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
  }

  private static PingPong.PingPongSettings pp(int size, int iters, boolean check, boolean events) {
    return new PingPong.PingPongSettings(
        null, 1, 0, size, Mtu.MTU_1024, 100, iters, 0, check, events, Duration.ofSeconds(30));
  }

  private static <T> CompletableFuture<T> onThread(String name, Supplier<T> body) {
    CompletableFuture<T> f = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        f.complete(body.get());
      } catch (Throwable e) {
        f.completeExceptionally(e);
      }
    }, name);
    t.setDaemon(true);
    t.start();
    return f;
  }

  private record PingPongRun(PingPong.PingPongResult server, PingPong.PingPongResult client) {}

  private PingPongRun pingPong(RdmaProvider provider, PingPong.PingPongSettings server,
      PingPong.PingPongSettings client) throws Exception {
    try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      CompletableFuture<PingPong.PingPongResult> s =
          onThread("pp-server", () -> PingPong.serve(provider, server, listener, serverOut));
      PingPong.PingPongResult c = PingPong.connect(provider, client,
          new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort()),
          Duration.ofSeconds(5), clientOut);
      return new PingPongRun(s.get(60, TimeUnit.SECONDS), c);
    }
  }

  @Test
  void pingPongServerAndClientExchangeEveryMessageAndCheckTheData() throws Exception {
    try (RdmaProvider provider = soft()) {
      ResourceCounts before = provider.liveResources();
      PingPong.PingPongSettings s = pp(3 * PingPong.PAGE + 100, 300, true, true);
      PingPongRun r = pingPong(provider, s, s);
      for (PingPong.PingPongResult x : new PingPong.PingPongResult[] {r.server(), r.client()}) {
        assertEquals(300, x.iters());
        assertEquals(2L * 300 * s.size(), x.bytes());
        assertArrayEquals(new int[0], x.invalidPages());
      }
      // each learnt the other's address as it was
      assertEquals(r.server().local(), r.client().remote());
      assertEquals(r.client().local(), r.server().remote());
      assertEquals(NONE, provider.liveResources().minus(before));
    }
    String out = clientOutput.toString(StandardCharsets.UTF_8);
    assertTrue(out.contains("  local address:  LID 0x0000, QPN 0x"), out);
    assertTrue(out.contains("  remote address: LID 0x0000, QPN 0x"), out);
  }

  @Test
  void pingPongsCheckFindsPagesAClientWithoutChkLeftUnmarked() throws Exception {
    try (RdmaProvider provider = soft()) {
      ResourceCounts before = provider.liveResources();
      PingPongRun r = pingPong(provider, pp(2 * PingPong.PAGE, 5, true, true),
          pp(2 * PingPong.PAGE, 5, false, true));
      assertArrayEquals(new int[] {0, 1}, r.server().invalidPages());
      assertEquals(NONE, provider.liveResources().minus(before));
    }
    PingPong.PingPongResult fake =
        new PingPong.PingPongResult(null, null, 5, 10, 1.0, new int[] {0, 1}, -1);
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    PingPong.printSummary(fake, new PrintStream(b, true, StandardCharsets.UTF_8));
    assertTrue(b.toString(StandardCharsets.UTF_8).contains("invalid data in page 1"));
  }

  @Test
  void pollingPingPongLoopAllocatesNothingPerIteration() throws Exception {
    try (RdmaProvider provider = soft()) {
      PingPong.PingPongSettings s = pp(64, 3000, false, false);
      PingPongRun r = pingPong(provider, s, s);
      for (PingPong.PingPongResult x : new PingPong.PingPongResult[] {r.server(), r.client()}) {
        assertTrue(x.loopAllocatedBytes() >= 0, "this JVM does not count allocations");
        // anything allocated per iteration is at least one 16-byte object each time
        assertTrue(x.loopAllocatedBytes() < 16L * x.iters(), "the loop allocated "
            + x.loopAllocatedBytes() + " B for " + x.iters() + " iterations");
      }
    }
  }

  private static RpingSession.RpingSettings rp(int size, int count) {
    return new RpingSession.RpingSettings(size, count, true, true, Duration.ofSeconds(30));
  }

  @Test
  void rpingServerReadsAndWritesBackEveryPingOfTheClient() throws Exception {
    try (RdmaProvider provider = soft()) {
      ResourceCounts before = provider.liveResources();
      RpingSession.RpingResult server;
      RpingSession.RpingResult client;
      try (RpingSession.RpingServer srv = RpingSession.RpingServer.listen(provider,
          new InetSocketAddress("127.0.0.1", 0))) {
        CompletableFuture<RpingSession.RpingResult> s = onThread("rping-server",
            () -> srv.serveOne(rp(100, 7), Duration.ofSeconds(30), serverOut));
        client = RpingSession.client(provider, srv.localAddress(), null, rp(100, 7), clientOut);
        server = s.get(60, TimeUnit.SECONDS);
      }
      assertEquals(7, client.pings());
      assertEquals(7, server.pings());
      assertEquals(NONE, provider.liveResources().minus(before));
    }
    String[] c = clientOutput.toString(StandardCharsets.UTF_8).split("\n");
    String[] s = serverOutput.toString(StandardCharsets.UTF_8).split("\n");
    assertEquals(7, c.length);
    assertEquals(7, s.length);
    for (int n = 0; n < 7; n++) {
      assertEquals("ping data: " + RealToolsInteropTest.rpingText(n, 100), c[n]);
      assertEquals("server ping data: " + RealToolsInteropTest.rpingText(n, 100), s[n]);
    }
  }

  @Test
  void rpingServerWithACountFailsWhenTheClientPingsFewerTimes() throws Exception {
    try (RdmaProvider provider = soft()) {
      ResourceCounts before = provider.liveResources();
      try (RpingSession.RpingServer srv = RpingSession.RpingServer.listen(provider,
          new InetSocketAddress("127.0.0.1", 0))) {
        CompletableFuture<RpingSession.RpingResult> s = onThread("rping-server",
            () -> srv.serveOne(rp(64, 3), Duration.ofSeconds(30), serverOut));
        assertEquals(2, RpingSession.client(provider, srv.localAddress(), null, rp(64, 2),
            clientOut).pings());
        Exception e = assertThrows(Exception.class, () -> s.get(60, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("made 2 pings, not the 3"),
            e.getCause().getMessage());
      }
      assertEquals(NONE, provider.liveResources().minus(before));
    }
  }

  @Test
  void rpingDataIsRpingsPattern() throws IOException {
    // as the real rping printed it in the Soft-RoCE VM
    assertEquals("rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr",
        RealToolsInteropTest.rpingText(0, 64));
    try (dev.pekkordma.memory.OffHeapBuffer b = dev.pekkordma.memory.OffHeapBuffer.allocate(200)) {
      for (int n : new int[] {0, 1, 57, 58, 12345, Integer.MAX_VALUE}) {
        for (int size : new int[] {RpingData.MIN_SIZE, 64, 200}) {
          RpingData.fill(b.address(), size, n);
          assertEquals(RealToolsInteropTest.rpingText(n, size),
              RpingData.text(b.address(), size), n + "/" + size);
          assertEquals(-1, RpingData.firstMismatch(b.address(), size, n));
          assertEquals(size - 1, RpingData.strlen(b.address(), size), "strlen");
        }
        RpingData.fill(b.address(), 64, n + 1);
        assertTrue(RpingData.firstMismatch(b.address(), 64, n) >= 0);
      }
      RpingData.putInfo(b.address(), 0x0102030405060708L, 0x0a0b0c0d, 64);
      byte[] raw = new byte[16];
      dev.pekkordma.memory.NativeMemory.copyToArray(b.address(), raw, 0, 16);
      assertArrayEquals(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 0, 0, 0, 64}, raw);
      assertEquals(0x0102030405060708L, RpingData.infoAddress(b.address()));
      assertEquals(0x0a0b0c0d, RpingData.infoRkey(b.address()));
      assertEquals(64, RpingData.infoSize(b.address()));
    }
  }

  @Test
  void pingPongAddressesGoOnTheWireAsRcPingpongWritesThem() {
    byte[] g = new byte[16];
    g[10] = (byte) 0xff;
    g[11] = (byte) 0xff;
    g[12] = 127;
    g[15] = 1;
    PingPongDest d = new PingPongDest(0, 0x11, 0x7a8824, dev.pekkordma.verbs.Gid.of(g));
    byte[] wire = d.encode();
    assertEquals(PingPongDest.MESSAGE_SIZE, wire.length);
    assertEquals("0000:000011:7a8824:00000000000000000000ffff7f000001\0",
        new String(wire, StandardCharsets.US_ASCII));
    assertEquals(d, PingPongDest.decode(wire));
    assertTrue(d.global());
    assertEquals("LID 0x0000, QPN 0x000011, PSN 0x7a8824, GID ::ffff:127.0.0.1", d.describe());
    assertFalse(new PingPongDest(1, 2, 3, dev.pekkordma.verbs.Gid.ZERO).global());
    assertEquals("::", PingPongDest.ipv6Text(dev.pekkordma.verbs.Gid.ZERO));
    assertEquals("fe80::7f00:1:a65b:1",
        PingPongDest.ipv6Text(dev.pekkordma.verbs.Gid.parse("fe80:0000:0000:0000:7f00:0001:a65b:0001")));
    PingPongFailure bad = assertThrows(PingPongFailure.class, () -> PingPongDest.decode(
        "0000:00001x:7a8824:00000000000000000000ffff7f000001\0".getBytes(StandardCharsets.US_ASCII)));
    assertTrue(bad.getMessage().contains("QPN '00001x' is not hex"), bad.getMessage());
    bad = assertThrows(PingPongFailure.class, () -> PingPongDest.decode(new byte[52]));
    assertTrue(bad.getMessage().contains("is not LID:QPN:PSN:GID"), bad.getMessage());
  }

  private static int run(boolean rping, String... args) {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
    PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    int rc = rping ? Rping.execute(args, o, e) : RcPingPong.execute(args, o, e);
    lastError = err.toString(StandardCharsets.UTF_8);
    return rc;
  }

  private static String lastError;

  @Test
  void badOptionsNameWhatWasWrong() {
    assertEquals(2, run(false, "-m", "1000"));
    assertTrue(lastError.contains("-m/--mtu must be 256, 512, 1024, 2048 or 4096, was 1000"), lastError);
    assertEquals(2, run(false, "-r", "1"));
    assertTrue(lastError.contains("-r/--rx-depth"), lastError);
    assertEquals(2, run(false, "--provider", "fast"));
    assertTrue(lastError.contains("--provider must be auto, soft or native, was 'fast'"), lastError);
    assertEquals(1, run(false, "--provider", "soft", "-p", "0", "--timeout", "5", "127.0.0.1"));
    assertTrue(lastError.contains("Ethernet (RoCE): QPs there need a GID, give -g/--gid-idx"),
        lastError);
    assertEquals(2, run(true, "-s", "-c"));
    assertTrue(lastError.contains("give one of -s (server) and -c (client)"), lastError);
    assertEquals(2, run(true, "-c"));
    assertTrue(lastError.contains("the client needs -a"), lastError);
    assertEquals(2, run(true, "-s", "-S", "25"));
    assertTrue(lastError.contains("Invalid size 25 (valid range is 26 to 65535)"), lastError);
    assertEquals(2, run(true, "-c", "-a", "127.0.0.1", "-C", "-1"));
    assertTrue(lastError.contains("Invalid count -1"), lastError);
  }

  @Test
  void helpAndVersionWork() {
    // rping's -V (verify) is not picocli's --version
    for (boolean rping : new boolean[] {true, false}) {
      assertEquals(0, run(rping, "--help"), lastError);
      assertEquals(0, run(rping, "--version"), lastError);
    }
    assertEquals(0, run(true, "-h"), lastError);
  }
}
