package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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

  private static BulkClient.Settings settings(long size, int chunk, int depth, TransferMode mode,
      long corruptAt) {
    return new BulkClient.Settings(size, chunk, depth, mode, 99, 256L << 20,
        Duration.ofSeconds(20), 200, corruptAt);
  }

  private static BulkTransfer.CommonOptions common() {
    BulkTransfer.CommonOptions c = new BulkTransfer.CommonOptions();
    c.progress = Progress.Kind.NONE;
    c.ringLimit = 256L << 20;
    return c;
  }

  private BulkTransfer.DemoOutcome demo(RdmaProvider provider, BulkClient.Settings s) {
    return BulkTransfer.demo(provider, s, common(), out);
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
}
