package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Bad input is refused before any RDMA resource is opened, naming the option. */
class CommandLineTest {
  private String err;

  private int run(String... args) {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    int code = BulkTransfer.execute(args, new PrintStream(o, true, StandardCharsets.UTF_8),
        new PrintStream(e, true, StandardCharsets.UTF_8));
    err = e.toString(StandardCharsets.UTF_8);
    return code;
  }

  @Test
  void sizeZero() {
    assertEquals(2, run("--size", "0"));
    assertTrue(err.contains("--size") && err.contains("zero"), err);
  }

  @Test
  void sizeNegative() {
    assertEquals(2, run("--size=-1g"));
    assertTrue(err.contains("--size") && err.contains("negative"), err);
  }

  @Test
  void sizeUnparsable() {
    assertEquals(2, run("demo", "--size", "12q"));
    assertTrue(err.contains("--size") && err.contains("'12q' is not a size"), err);
  }

  @Test
  void aChunkLargerThanTheSizeShrinksToIt() {
    BulkTransfer.TransferOptions o = new BulkTransfer.TransferOptions();
    o.size = 1024;
    o.chunk = 1 << 20; // the default
    o.depth = 16;
    o.timeoutSeconds = 30;
    assertEquals(1024, o.settings(Long.MAX_VALUE).chunkSize());
    o.chunk = 512;
    assertEquals(512, o.settings(Long.MAX_VALUE).chunkSize());
  }

  @Test
  void chunkBeyondAJavaBuffer() {
    assertEquals(2, run("client", "--size", "4g", "--chunk", "4g"));
    assertTrue(err.contains("--chunk 4 GiB is too large"), err);
  }

  @Test
  void depthOutOfRange() {
    assertEquals(2, run("--depth", "0"));
    assertTrue(err.contains("--depth"), err);
  }

  @Test
  void unknownMode() {
    assertEquals(2, run("--mode", "read"));
    assertTrue(err.contains("--mode"), err);
  }

  @Test
  void badAddress() {
    assertEquals(2, run("client", "--connect", "localhost"));
    assertTrue(err.contains("--connect") && err.contains("HOST:PORT"), err);
  }

  @Test
  void unknownProvider() {
    assertEquals(2, run("--provider", "rxe"));
    assertTrue(err.contains("--provider must be auto, soft or native"), err);
  }

  @Test
  void help() {
    assertEquals(0, run("--help"));
  }
}
