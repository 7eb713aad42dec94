package dev.pekkordma.nativeverbs;

import static dev.pekkordma.verbs.PortCounters.NOT_COUNTED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.PortCounters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The sysfs counter reader on fake trees: no RDMA device needed, it runs in every build. */
class SysfsCountersTest {
  @TempDir
  Path root;

  private Path port(String device, int port) {
    return root.resolve("class/infiniband/" + device + "/ports/" + port);
  }

  private static void write(Path dir, String name, String content) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve(name), content);
  }

  @Test
  void rxeHwCountersMapToEveryField() throws IOException {
    Path hw = port("rxe0", 1).resolve("hw_counters");
    write(hw, "sent_pkts", "120\n");
    write(hw, "rcvd_pkts", "118\n");
    write(hw, "rcvd_rnr_err", "7\n");
    write(hw, "send_rnr_err", "3\n");
    write(hw, "completer_retry_err", "2\n");
    write(hw, "retry_exceeded_err", "1\n");
    write(hw, "retry_rnr_exceeded_err", "4\n");
    write(hw, "duplicate_request", "5\n");
    write(hw, "lifespan", "10\n");

    PortCounters c = new SysfsCounters(root).read("rxe0", 1);

    assertEquals(new PortCounters(120, 118, 7, 3, 2, 1, 4, c.all()), c);
    assertEquals(8, c.all().size(), "every counter but lifespan: " + c.all());
    assertEquals(5L, c.all().get("duplicate_request"));
    assertFalse(c.all().containsKey("lifespan"), "lifespan is a setting, not a count");
  }

  @Test
  void mlx5NamesFillWhatTheyCount() throws IOException {
    Path dir = port("mlx5_0", 1);
    write(dir.resolve("counters"), "port_xmit_packets", "1000\n");
    write(dir.resolve("counters"), "port_rcv_packets", "900\n");
    write(dir.resolve("counters"), "port_xmit_data", "64000\n");
    Path hw = dir.resolve("hw_counters");
    write(hw, "rnr_nak_retry_err", "11\n");
    write(hw, "out_of_buffer", "12\n");
    write(hw, "local_ack_timeout_err", "13\n");
    write(hw, "req_transport_retries_exceeded", "14\n");
    write(hw, "req_rnr_retries_exceeded", "15\n");

    PortCounters c = new SysfsCounters(root).read("mlx5_0", 1);

    assertEquals(1000, c.packetsSent());
    assertEquals(900, c.packetsReceived());
    assertEquals(11, c.rnrNaksReceived());
    assertEquals(12, c.rnrNaksSent());
    assertEquals(13, c.retries());
    assertEquals(14, c.retriesExceeded());
    assertEquals(15, c.rnrRetriesExceeded());
    assertEquals(64000L, c.all().get("port_xmit_data"), "counters/ is in all too");
  }

  @Test
  void whatTheDeviceDoesNotKeepIsNotCounted() throws IOException {
    // an older mlx5: no req_*_retries_exceeded
    write(port("mlx5_1", 1).resolve("hw_counters"), "rnr_nak_retry_err", "1\n");

    PortCounters c = new SysfsCounters(root).read("mlx5_1", 1);

    assertEquals(1, c.rnrNaksReceived());
    assertEquals(NOT_COUNTED, c.packetsSent());
    assertEquals(NOT_COUNTED, c.packetsReceived());
    assertEquals(NOT_COUNTED, c.rnrNaksSent());
    assertEquals(NOT_COUNTED, c.retries());
    assertEquals(NOT_COUNTED, c.retriesExceeded());
    assertEquals(NOT_COUNTED, c.rnrRetriesExceeded());
  }

  @Test
  void aPortWithoutCountersReadsNothingCounted() throws IOException {
    Files.createDirectories(port("rxe0", 1));

    for (PortCounters c : new PortCounters[] {new SysfsCounters(root).read("rxe0", 1),
        new SysfsCounters(root).read("no-such-device", 3)}) {
      assertEquals(new PortCounters(NOT_COUNTED, NOT_COUNTED, NOT_COUNTED, NOT_COUNTED,
          NOT_COUNTED, NOT_COUNTED, NOT_COUNTED, Map.of()), c);
    }
  }

  @Test
  void filesWithoutOneNumberAreSkipped() throws IOException {
    Path hw = port("rxe0", 1).resolve("hw_counters");
    write(hw, "sent_pkts", "not a number\n");
    write(hw, "rcvd_pkts", "");
    write(hw, "send_rnr_err", "-3\n");
    write(hw, "rcvd_rnr_err", "  42  \n");
    Files.createDirectories(hw.resolve("retry_exceeded_err")); // a directory, not a file
    Files.createSymbolicLink(hw.resolve("completer_retry_err"), hw.resolve("gone"));
    write(hw, "retry_rnr_exceeded_err", "18446744073709551615\n"); // 2^64 - 1

    PortCounters c = new SysfsCounters(root).read("rxe0", 1);

    assertEquals(NOT_COUNTED, c.packetsSent());
    assertEquals(NOT_COUNTED, c.packetsReceived());
    assertEquals(NOT_COUNTED, c.rnrNaksSent());
    assertEquals(42, c.rnrNaksReceived());
    assertEquals(NOT_COUNTED, c.retriesExceeded());
    assertEquals(NOT_COUNTED, c.retries());
    assertEquals(Long.MAX_VALUE, c.rnrRetriesExceeded(), "a u64 past 2^63 saturates");
    assertEquals(Map.of("rcvd_rnr_err", 42L, "retry_rnr_exceeded_err", Long.MAX_VALUE),
        c.all());
  }

  @Test
  void anUnreadableFileIsSkipped() throws IOException {
    Path hw = port("rxe0", 1).resolve("hw_counters");
    write(hw, "sent_pkts", "5\n");
    write(hw, "rcvd_pkts", "6\n");
    Path locked = hw.resolve("rcvd_pkts");
    Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
    boolean stillReadable = Files.isReadable(locked); // root reads it all the same

    PortCounters c = new SysfsCounters(root).read("rxe0", 1);

    assertEquals(5, c.packetsSent());
    assertEquals(stillReadable ? 6 : NOT_COUNTED, c.packetsReceived());
  }

  @Test
  void theDriversNamesWinOverTheGenericOnes() throws IOException {
    Path dir = port("rxe0", 1);
    write(dir.resolve("counters"), "port_xmit_packets", "1\n");
    write(dir.resolve("counters"), "duplicate_request", "2\n");
    write(dir.resolve("hw_counters"), "sent_pkts", "3\n");
    write(dir.resolve("hw_counters"), "duplicate_request", "4\n");

    PortCounters c = new SysfsCounters(root).read("rxe0", 1);

    assertEquals(3, c.packetsSent(), "rxe's sent_pkts before counters/port_xmit_packets");
    assertEquals(4L, c.all().get("duplicate_request"), "hw_counters/ wins a clash of names");
    assertEquals(1L, c.all().get("port_xmit_packets"));
  }

  @Test
  void eachPortReadsItsOwnDirectory() throws IOException {
    write(port("mlx5_0", 1).resolve("hw_counters"), "out_of_buffer", "1\n");
    write(port("mlx5_0", 2).resolve("hw_counters"), "out_of_buffer", "2\n");

    SysfsCounters s = new SysfsCounters(root);
    assertEquals(1, s.read("mlx5_0", 1).rnrNaksSent());
    assertEquals(2, s.read("mlx5_0", 2).rnrNaksSent());
  }

  @Test
  void theRootComesFromTheSystemProperty() throws IOException {
    write(port("rxe7", 1).resolve("hw_counters"), "sent_pkts", "99\n");
    String before = System.getProperty(SysfsCounters.ROOT_PROPERTY);
    System.setProperty(SysfsCounters.ROOT_PROPERTY, root.toString());
    try {
      SysfsCounters s = SysfsCounters.fromSystemProperty();
      assertEquals(99, s.read("rxe7", 1).packetsSent());
    } finally {
      if (before == null) System.clearProperty(SysfsCounters.ROOT_PROPERTY);
      else System.setProperty(SysfsCounters.ROOT_PROPERTY, before);
    }
    assertTrue(SysfsCounters.fromSystemProperty().portDirectory("rxe0", 1)
        .startsWith(before == null ? Path.of("/sys") : Path.of(before)), "the default is /sys");
  }
}
