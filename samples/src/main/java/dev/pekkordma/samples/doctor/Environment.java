package dev.pekkordma.samples.doctor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** What the doctor reads from the machine: the kernel, libraries, limits and sysfs. */
interface Environment {
  String kernel();

  /** Where {@code soname} is and the file it resolves to (its version), or null. */
  String library(String soname);

  /** The soft limit on locked memory in bytes; -1: unlimited. */
  long memlockLimit();

  /** A GID's type ("RoCE v2", "IB/RoCE v1"), from sysfs, or null where there is none. */
  String gidType(String device, int port, int index);

  /** This host's IPv4 addresses on interfaces that are up, loopback first. */
  List<InetAddress> localAddresses();

  /** The netdev behind a GID, from sysfs, or null. */
  String gidNetdev(String device, int port, int index);

  Environment LOCAL = new Environment() {
    private final List<String> libDirs = List.of("/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu",
        "/lib64", "/lib");

    @Override
    public String kernel() {
      return System.getProperty("os.name") + " " + System.getProperty("os.version");
    }

    @Override
    public String library(String soname) {
      for (String d : libDirs) {
        Path p = Path.of(d, soname);
        if (Files.exists(p)) {
          try {
            return p + " -> " + p.toRealPath().getFileName();
          } catch (IOException e) {
            return p.toString();
          }
        }
      }
      return null;
    }

    @Override
    public long memlockLimit() {
      try {
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
          if (!line.startsWith("Max locked memory")) continue;
          String soft = line.substring("Max locked memory".length()).trim().split("\\s+")[0];
          return soft.equals("unlimited") ? -1 : Long.parseLong(soft);
        }
      } catch (IOException | RuntimeException e) {
        // not Linux: nothing to say
      }
      return -1;
    }

    @Override
    public List<InetAddress> localAddresses() {
      List<InetAddress> out = new ArrayList<>();
      try {
        for (NetworkInterface n : Collections.list(NetworkInterface.getNetworkInterfaces())) {
          if (!n.isUp()) continue;
          for (InetAddress a : Collections.list(n.getInetAddresses())) {
            if (a instanceof Inet4Address) out.add(a);
          }
        }
      } catch (SocketException e) {
        // none to offer
      }
      out.sort((a, b) -> Boolean.compare(!a.isLoopbackAddress(), !b.isLoopbackAddress()));
      return out;
    }

    @Override
    public String gidType(String device, int port, int index) {
      return read(Path.of("/sys/class/infiniband", device, "ports", String.valueOf(port),
          "gid_attrs", "types", String.valueOf(index)));
    }

    @Override
    public String gidNetdev(String device, int port, int index) {
      return read(Path.of("/sys/class/infiniband", device, "ports", String.valueOf(port),
          "gid_attrs", "ndevs", String.valueOf(index)));
    }

    private String read(Path p) {
      try {
        String s = Files.readString(p).trim();
        return s.isEmpty() ? null : s;
      } catch (IOException | RuntimeException e) {
        return null;
      }
    }
  };
}
