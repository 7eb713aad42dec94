package dev.pekkordma.nativeverbs;

import dev.pekkordma.verbs.PortCounters;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A port's counters as the kernel shows them: {@code <root>/class/infiniband/<device>/ports/
 * <port>/counters/*} (the IB PMA's, which mlx5 keeps) and {@code .../hw_counters/*} (the
 * driver's own), one decimal number a file. Each field takes the first name the device has:
 * rxe's, then mlx5's; none is {@link PortCounters#NOT_COUNTED}.
 */
final class SysfsCounters {
  /** Where sysfs is (a fake tree in tests): this system property, else /sys. */
  static final String ROOT_PROPERTY = "pekko-rdma.native.sysfs-root";

  // one row per field of PortCounters, rxe's name first
  private static final String[] SENT = {"sent_pkts", "port_xmit_packets"};
  private static final String[] RECEIVED = {"rcvd_pkts", "port_rcv_packets"};
  /** mlx5's rnr_nak_retry_err counts RNR NAKs received (its retry limit not yet spent). */
  private static final String[] RNR_NAKS_RECEIVED = {"rcvd_rnr_err", "rnr_nak_retry_err"};
  /**
   * mlx5 sends no count of RNR NAKs; out_of_buffer (a message found no receive posted) is the
   * same event on RC, though it counts UD's dropped datagrams too.
   */
  private static final String[] RNR_NAKS_SENT = {"send_rnr_err", "out_of_buffer"};
  /** mlx5's local_ack_timeout_err: ACK timeouts that were retried. */
  private static final String[] RETRIES = {"completer_retry_err", "local_ack_timeout_err"};
  private static final String[] RETRIES_EXCEEDED = {"retry_exceeded_err",
      "req_transport_retries_exceeded"};
  private static final String[] RNR_RETRIES_EXCEEDED = {"retry_rnr_exceeded_err",
      "req_rnr_retries_exceeded"};

  private final Path root;

  SysfsCounters(Path root) {
    this.root = root;
  }

  /** Reads sysfs at {@link #ROOT_PROPERTY}, else /sys. */
  static SysfsCounters fromSystemProperty() {
    return new SysfsCounters(Path.of(System.getProperty(ROOT_PROPERTY, "/sys")));
  }

  /** The port directory the counters are read from. */
  Path portDirectory(String device, int port) {
    return root.resolve("class/infiniband").resolve(device).resolve("ports")
        .resolve(Integer.toString(port));
  }

  /** Now's counters of each of the device's ports (those sysfs lists), port 1 first. */
  List<PortCounters> readAll(String device) {
    List<PortCounters> ports = new ArrayList<>();
    for (int port = 1; Files.isDirectory(portDirectory(device, port)); port++) {
      ports.add(read(device, port));
    }
    return ports;
  }

  /** Now's counters of {@code port}; a device (or a tree) with none reads all NOT_COUNTED. */
  PortCounters read(String device, int port) {
    Path dir = portDirectory(device, port);
    Map<String, Long> all = new HashMap<>();
    readInto(dir.resolve("counters"), all);
    readInto(dir.resolve("hw_counters"), all); // the driver's own win a clash of names
    return new PortCounters(first(all, SENT), first(all, RECEIVED),
        first(all, RNR_NAKS_RECEIVED), first(all, RNR_NAKS_SENT), first(all, RETRIES),
        first(all, RETRIES_EXCEEDED), first(all, RNR_RETRIES_EXCEEDED), all);
  }

  private static long first(Map<String, Long> all, String[] names) {
    for (String n : names) {
      Long v = all.get(n);
      if (v != null) return v;
    }
    return PortCounters.NOT_COUNTED;
  }

  /** Every file of {@code dir} that holds one number; the rest is skipped. */
  private static void readInto(Path dir, Map<String, Long> into) {
    if (!Files.isDirectory(dir)) return;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path f : files) {
        String name = f.getFileName().toString();
        // lifespan is hw_counters' cache period in ms, a setting rather than a count
        if (name.equals("lifespan") || !Files.isRegularFile(f)) continue;
        Long v = number(f);
        if (v != null) into.put(name, v);
      }
    } catch (IOException | SecurityException e) {
      // the directory went away or may not be listed: what was read stands
    }
  }

  /** The file's number, or null when it cannot be read (some need root) or holds none. */
  private static Long number(Path f) {
    try {
      String s = new String(Files.readAllBytes(f), StandardCharsets.US_ASCII).trim();
      long v = Long.parseUnsignedLong(s);
      return v < 0 ? Long.MAX_VALUE : v; // a u64 past 2^63: saturate, never read as NOT_COUNTED
    } catch (IOException | SecurityException | NumberFormatException e) {
      return null;
    }
  }
}
