package dev.pekkordma.nativeverbs;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Whether the native provider can serve here, and if not the one reason why, in one line with
 * its remedy. The kernel's view comes first, read from the file system in well under a
 * millisecond: libibverbs finds devices through {@code /sys/class/infiniband} and opens them
 * through {@code /dev/infiniband/uverbsN}, so where either is missing it would find none, and
 * loading it (jnr-ffi generating its bindings, about a second) is skipped. Only where the kernel
 * has a usable device is the library asked.
 */
final class DeviceProbe {
  /** What the library says when asked: its load error, or how many devices it lists. */
  interface Library {
    /** Why libibverbs.so.1 did not load, or null when it did. */
    String loadError();

    /** The devices ibv_get_device_list returns. */
    int deviceCount();
  }

  private final Path sysClass;
  private final Path dev;
  private final Supplier<Library> library;

  DeviceProbe(Path sysClass, Path dev, Supplier<Library> library) {
    this.sysClass = sysClass;
    this.dev = dev;
    this.library = library;
  }

  /** This machine's: /sys/class/infiniband, /dev/infiniband and libibverbs through jnr-ffi. */
  static DeviceProbe local() {
    return new DeviceProbe(Path.of("/sys/class/infiniband"), Path.of("/dev/infiniband"),
        () -> new Library() {
          @Override
          public String loadError() {
            return Verbs.available() ? null : String.valueOf(Verbs.loadError().getMessage());
          }

          @Override
          public int deviceCount() {
            return NativeProvider.listDevices().size();
          }
        });
  }

  /** Null when a device is there to serve; otherwise why not, in one line with its remedy. */
  String whyNot() {
    List<String> kernel = list(sysClass, "");
    if (kernel.isEmpty()) {
      return say("no RDMA device (", sysClass, " is ", Files.isDirectory(sysClass) ? "empty"
          : "missing", "): for Soft-RoCE, modprobe rdma_rxe && rdma link add rxe0 type rxe"
          + " netdev <an up Ethernet netdev>");
    }
    List<String> uverbs = list(dev, "uverbs");
    if (uverbs.isEmpty()) {
      return say("RDMA device(s) ", kernel, " but no ", dev, "/uverbs*: modprobe ib_uverbs"
          + " (and rdma_ucm for the connection manager)");
    }
    List<String> denied = new ArrayList<>();
    for (String n : uverbs) {
      Path p = dev.resolve(n);
      if (!Files.isReadable(p) || !Files.isWritable(p)) denied.add(n);
    }
    if (denied.size() == uverbs.size()) {
      return say("this user may not read and write ", dev, "/", denied, ": fix the permissions"
          + " (rdma-core's udev rules, or chmod 666 ", dev, "/uverbs*)");
    }
    Library lib = library.get();
    String loadError = lib.loadError();
    if (loadError != null) {
      return say("libibverbs.so.1 not found (", firstLine(loadError), "): apt-get install"
          + " libibverbs1 ibverbs-providers");
    }
    int listed;
    try {
      listed = lib.deviceCount();
    } catch (RuntimeException e) {
      return say("ibv_get_device_list failed: ", firstLine(String.valueOf(e.getMessage())));
    }
    if (listed == 0) {
      return say("libibverbs lists none of the kernel's RDMA devices ", kernel, ": apt-get"
          + " install ibverbs-providers (its user-space drivers)");
    }
    return null;
  }

  /**
   * The parts as one string, joined without the JDK's invokedynamic concatenation: its first use
   * of each shape costs milliseconds, and this runs once, at start-up, where they count.
   */
  private static String say(Object... parts) {
    StringBuilder b = new StringBuilder();
    for (Object p : parts) b.append(p);
    return b.toString();
  }

  private static String firstLine(String s) {
    int nl = s.indexOf('\n');
    String line = nl < 0 ? s : s.substring(0, nl);
    return line.length() <= 160 ? line : say(line.substring(0, 157), "...");
  }

  /** The sorted names in {@code dir} starting with {@code prefix}; none when it is missing. */
  private static List<String> list(Path dir, String prefix) {
    File[] fs = dir.toFile().listFiles();
    List<String> names = new ArrayList<>();
    if (fs == null) return names;
    for (File f : fs) if (f.getName().startsWith(prefix)) names.add(f.getName());
    names.sort(null);
    return names;
  }
}
