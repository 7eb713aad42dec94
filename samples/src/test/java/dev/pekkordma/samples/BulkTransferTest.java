package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Small transfers end to end over the software provider. */
@Timeout(120)
class BulkTransferTest {
  private static final ResourceCounts NONE = new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0);
  private final ByteArrayOutputStream output = new ByteArrayOutputStream();
  private final PrintStream out = new PrintStream(output, true, StandardCharsets.UTF_8);

  private static RdmaProvider soft(String extra) {
    Config c = ConfigFactory.parseString("pekko-rdma { provider = soft\n" + extra + "\n}")
        .withFallback(ConfigFactory.load());
    return RdmaProviders.load(c);
  }

  private static BulkClient.ClientSettings settings(
      long size, int chunk, int depth, TransferMode mode, long corruptAt) {
    return new BulkClient.ClientSettings(size, chunk, depth, mode, 99, 256L << 20,
        Duration.ofSeconds(20), 200, corruptAt);
  }

  private static BulkTransfer.BulkOptions common() {
    BulkTransfer.BulkOptions c = new BulkTransfer.BulkOptions();
    c.progress = Progress.Display.NONE;
    c.ringLimit = 256L << 20;
    return c;
  }

  private BulkTransfer.DemoOutcome demo(RdmaProvider provider, BulkClient.ClientSettings s) {
    return BulkTransfer.demo(provider, s, common(), out);
  }

  private static void assumeCm(RdmaProvider provider) {
    assumeTrue(provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER),
        "the " + provider.name() + " provider has no connection manager yet");
  }

  @Test
  void overQpsConnectedByHand() {
    try (RdmaProvider provider = soft("")) {
      BulkTransfer.DemoOutcome o = BulkTransfer.demo(provider,
          settings(4 << 20, 64 << 10, 16, TransferMode.WRITE, -1), common(), out, false);
      assertTrue(o.client().ok(), o.client().check().describe());
      assertEquals(NONE, o.leaked());
    }
  }

  @Test
  void overTheConnectionManager() {
    try (RdmaProvider provider = soft("")) {
      assumeCm(provider);
      for (TransferMode mode : TransferMode.values()) {
        BulkTransfer.DemoOutcome o = BulkTransfer.demo(provider,
            settings(4 << 20, 64 << 10, 16, mode, -1), common(), out, true);
        assertTrue(o.client().ok(), mode + ": " + o.client().check().describe());
        assertEquals(NONE, o.leaked(), mode.toString());
      }
    }
  }

  @Test
  void serverAndClientSubcommands() throws Exception {
    try (RdmaProvider provider = soft("")) {
      assumeCm(provider);
    }
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // a free port number, for the CM's port space
    }
    ByteArrayOutputStream serverOutput = new ByteArrayOutputStream();
    PrintStream serverOut = new PrintStream(serverOutput, true, StandardCharsets.UTF_8);
    String address = "127.0.0.1:" + port;
    CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> BulkTransfer.execute(
        new String[] {"server", "--bind", address, "--provider", "soft", "--progress", "none",
            "--accept-timeout", "30", "-v"}, serverOut, serverOut));
    int client = -1;
    for (int attempt = 0; attempt < 50; attempt++) {
      output.reset();
      client = BulkTransfer.execute(new String[] {"client", "--connect", address, "--size", "3m",
          "--chunk", "100k", "--mode", "send", "--provider", "soft", "--progress", "none", "-v"},
          out, out);
      // until the server listens, the connect is rejected (nobody listens there)
      if (client == 0 || !output.toString(StandardCharsets.UTF_8).contains("nobody listens")) {
        break;
      }
      Thread.sleep(100);
    }
    String text = output.toString(StandardCharsets.UTF_8);
    assertEquals(0, client, text);
    assertTrue(text.contains("checksum OK") && text.contains("resources    all closed"), text);
    assertEquals(0, server.get(60, TimeUnit.SECONDS), serverOutput.toString(StandardCharsets.UTF_8));
    String serverText = serverOutput.toString(StandardCharsets.UTF_8);
    assertTrue(serverText.contains("checksum OK"), serverText);
    assertTrue(serverText.contains("resources    all closed"), serverText);
  }

  @Test
  void writesEightMebibytesAndTheChecksumsMatch() {
    try (RdmaProvider provider = soft("")) {
      ResourceCounts start = provider.liveResources();
      BulkTransfer.DemoOutcome o = demo(provider, settings(8 << 20, 256 << 10, 8,
          TransferMode.WRITE, -1));
      assertTrue(o.client().ok(), o.client().check().describe());
      assertTrue(o.server().check().ok(), o.server().check().describe());
      assertEquals(o.client().clientCrc(), o.server().crc());
      assertEquals(8 << 20, o.server().bytes());
      assertEquals(32, o.server().chunks());
      assertEquals(NONE, o.leaked());
      assertEquals(start, provider.liveResources());
    }
  }

  @Test
  void sendsWithAShortLastChunkAndFewCredits() {
    // 3 slots for 245 chunks: credits run out and come back many times
    try (RdmaProvider provider = soft("")) {
      long size = 1_000_003;
      BulkTransfer.DemoOutcome o = demo(provider, settings(size, 4096, 3, TransferMode.SEND, -1));
      assertTrue(o.client().ok(), o.client().check().describe());
      assertEquals(size, o.server().bytes());
      assertEquals(245, o.server().chunks());
      assertEquals(3, o.server().slots());
      assertEquals(NONE, o.leaked());
    }
  }

  @Test
  void writesWithOneSlot() {
    try (RdmaProvider provider = soft("")) {
      BulkTransfer.DemoOutcome o = demo(provider, settings(100_000, 1000, 1,
          TransferMode.WRITE, -1));
      assertTrue(o.client().ok(), o.client().check().describe());
      assertEquals(100, o.server().chunks());
      assertEquals(NONE, o.leaked());
    }
  }

  @Test
  void chunksSmallerThanTheControlMessages() {
    // the FIN lands in a ring slot like a chunk: slots must hold it even when chunks are tiny
    try (RdmaProvider provider = soft("")) {
      for (TransferMode mode : TransferMode.values()) {
        BulkTransfer.DemoOutcome o = demo(provider, settings(1000, 7, 4, mode, -1));
        assertTrue(o.client().ok(), mode + ": " + o.client().check().describe());
        assertEquals(143, o.server().chunks());
        assertEquals(NONE, o.leaked());
      }
      BulkTransfer.DemoOutcome one = demo(provider, settings(1, 1, 1, TransferMode.WRITE, -1));
      assertTrue(one.client().ok(), one.client().check().describe());
    }
  }

  @Test
  void aCorruptedByteIsDetectedOnBothSides() {
    try (RdmaProvider provider = soft("")) {
      BulkTransfer.DemoOutcome o = demo(provider, settings(2 << 20, 64 << 10, 4,
          TransferMode.WRITE, 1_234_567));
      assertFalse(o.server().check().ok());
      assertTrue(o.server().check().describe().contains("CRC32C"),
          o.server().check().describe());
      assertFalse(o.client().ok());
      assertFalse(o.client().serverSaysOk());
      assertEquals(NONE, o.leaked());
    }
  }

  @Test
  void theCommandLineSaysChecksumOkAndExitsZero() {
    int code = BulkTransfer.execute(new String[] {"--size", "4m", "--chunk", "64k",
        "--provider", "soft", "--progress", "none", "--verbose"}, out, out);
    String text = output.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, text);
    assertTrue(text.contains("checksum OK"), text);
    assertTrue(text.contains("MiB/s") && text.contains("Gbit/s"), text);
    assertTrue(text.contains("resources    all closed"), text);
  }

  @Test
  void theCommandLineReportsCorruptionAndExitsOne() {
    int code = BulkTransfer.execute(new String[] {"--size", "1m", "--chunk", "64k",
        "--provider", "soft", "--progress", "none", "--corrupt-at", "0"}, out, out);
    String text = output.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, text);
    assertTrue(text.contains("FAILED"), text);
    assertFalse(text.contains("checksum OK"), text);
  }

  @Test
  void aChunkBeyondTheDevicesMaxMessageSizeIsRefusedNamingTheOption() {
    try (RdmaProvider provider = soft("soft.max-msg-size = 65536")) {
      ResourceCounts start = provider.liveResources();
      BadOption e = assertThrows(BadOption.class, () -> demo(provider,
          settings(1 << 20, 128 << 10, 4, TransferMode.WRITE, -1)));
      assertTrue(e.getMessage().contains("--chunk") && e.getMessage().contains("max message size"),
          e.getMessage());
      assertEquals(start, provider.liveResources());
    }
  }

  /** The server's process is killed mid-transfer: the client's error names where it was. */
  @Test
  void aClientWhoseServerIsKilledSaysWhichServer() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    String address = "127.0.0.1:" + port;
    Process server = new ProcessBuilder(java.nio.file.Path.of(System.getProperty("java.home"),
        "bin", "java").toString(), "-cp", System.getProperty("java.class.path"),
        BulkTransfer.class.getName(), "server", "--bind", address, "--provider", "soft",
        "--progress", "none", "--accept-timeout", "60", "-v").redirectErrorStream(true).start();
    Thread killer = new Thread(() -> { // once a client is connected and data moves
      try (java.io.BufferedReader lines = new java.io.BufferedReader(new java.io.InputStreamReader(
          server.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = lines.readLine()) != null && !line.contains("connected to")) {
          // the server's start
        }
        Thread.sleep(300);
      } catch (java.io.IOException | InterruptedException e) {
        // killed below all the same
      }
      server.destroyForcibly();
    });
    killer.start();
    try {
      int code = -1;
      String text = "";
      for (int attempt = 0; attempt < 200; attempt++) {
        output.reset();
        code = BulkTransfer.execute(new String[] {"client", "--connect", address, "--size",
            "64g", "--chunk", "1m", "--provider", "soft", "--progress", "none",
            "--timeout", "20"}, out, out);
        text = output.toString(StandardCharsets.UTF_8);
        if (!text.contains("nobody listens")) break; // the server was not up yet: again
        Thread.sleep(100);
      }
      assertEquals(1, code, text);
      assertTrue(text.contains(address), "the error names the server: " + text);
    } finally {
      server.destroyForcibly();
      server.waitFor(10, TimeUnit.SECONDS);
      killer.join(10_000);
    }
  }
}
