package dev.pekkordma.nativeverbs;

import com.typesafe.config.Config;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviderFactory;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Registers the native provider with {@link java.util.ServiceLoader} (see META-INF/services). */
public final class NativeProviderFactory implements RdmaProviderFactory {
  private static final String MAP_RESERVE = "native.map-reserve";

  @Override
  public String name() {
    return "native";
  }

  @Override
  public boolean devicesPresent() {
    try {
      return Verbs.available() && !NativeProvider.listDevices().isEmpty();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  @Override
  public String whyUnavailable() {
    return diagnose();
  }

  @Override
  public RdmaProvider create(Config libraryConfig) {
    long reserve = libraryConfig.hasPath(MAP_RESERVE) ? libraryConfig.getLong(MAP_RESERVE)
        : MapHeadroom.DEFAULT_RESERVE;
    return new NativeProvider(MapHeadroom.ofProcess(reserve));
  }

  /** What was looked for, what was found and how to fix it. */
  static String diagnose() {
    if (!Verbs.available()) {
      return "libibverbs.so.1 could not be loaded (" + Verbs.loadError() + "). Install Debian's"
          + " libibverbs1 and ibverbs-providers (apt-get install libibverbs1 ibverbs-providers),"
          + " and librdmacm1 for the connection manager.";
    }
    int found;
    String listError = null;
    try {
      found = NativeProvider.listDevices().size();
    } catch (RuntimeException e) {
      found = 0;
      listError = e.getMessage();
    }
    if (found > 0) return "libibverbs finds " + found + " device(s): nothing to fix";
    StringBuilder b = new StringBuilder("libibverbs.so.1 loaded but ibv_get_device_list found no"
        + " RDMA device" + (listError != null ? " (" + listError + ")" : "") + ". ");
    List<String> kernelDevices = list("/sys/class/infiniband");
    List<String> uverbs = list("/dev/infiniband");
    b.append("Kernel RDMA devices in /sys/class/infiniband: ")
        .append(kernelDevices == null ? "none (no directory: the kernel has no RDMA device"
            + " or no RDMA support)" : kernelDevices.isEmpty() ? "none" : kernelDevices)
        .append("; /dev/infiniband: ")
        .append(uverbs == null ? "missing" : uverbs.isEmpty() ? "empty" : uverbs).append(". ");
    if (kernelDevices == null || kernelDevices.isEmpty()) {
      b.append("Without an RDMA NIC, load Soft-RoCE: modprobe rdma_rxe && rdma link add rxe0"
          + " type rxe netdev eth0 (any up Ethernet netdev; needs a kernel with"
          + " CONFIG_RDMA_RXE, and the iproute2 'rdma' tool). ");
    }
    if (uverbs == null || uverbs.stream().noneMatch(n -> n.startsWith("uverbs"))) {
      b.append("User-space verbs need /dev/infiniband/uverbsN: modprobe ib_uverbs (and rdma_ucm"
          + " for the connection manager). ");
    } else {
      List<String> denied = new ArrayList<>();
      for (String n : uverbs) {
        Path p = Path.of("/dev/infiniband", n);
        if (n.startsWith("uverbs") && !(Files.isReadable(p) && Files.isWritable(p))) denied.add(n);
      }
      if (!denied.isEmpty()) {
        b.append("This user may not read and write ").append(denied)
            .append(" in /dev/infiniband: fix the permissions (rdma-core's udev rules, or"
                + " chmod 666 /dev/infiniband/uverbs*). ");
      } else if (kernelDevices != null && !kernelDevices.isEmpty()) {
        b.append("The kernel has devices but libibverbs has no user-space driver for them:"
            + " install Debian's ibverbs-providers. ");
      }
    }
    b.append("Or use the software provider (pekko-rdma.provider = soft).");
    return b.toString();
  }

  private static List<String> list(String dir) {
    File[] fs = new File(dir).listFiles();
    if (fs == null) return null;
    List<String> names = new ArrayList<>();
    for (File f : fs) names.add(f.getName());
    names.sort(null);
    return names;
  }
}
