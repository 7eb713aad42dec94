package dev.pekkordma.samples.doctor;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.Providers;
import dev.pekkordma.samples.SampleCommandLine;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code pekko-rdma doctor}: what this machine offers RDMA and what pekko-rdma would make of it,
 * as {@code ibv_devinfo} does plus a diagnosis: the provider that would be chosen and why, the
 * libraries and the memlock limit, every device with its ports (state, MTU, link layer) and GIDs
 * (type and netdev), the rdma_cm address a server would bind, and what to do about each problem.
 * Exit status 0 when nothing needs doing (the software provider serving for want of a device is
 * a note, unless {@code --require-device}), 1 when something does, 2 for bad options.
 */
@Command(name = "pekko-rdma doctor", mixinStandardHelpOptions = true,
    description = "Which RDMA provider pekko-rdma would use here and why, the devices, ports and"
        + " GIDs it would see, the limits that matter, and what to do about any problem.",
    footer = {"", "A problem found (each listed with what to do) is a failure: exit 1. Without an"
        + " RDMA device the software provider serves, which is a note, not a problem, unless"
        + " --require-device."})
public final class Doctor implements Callable<Integer> {
  /** Below this, registering a stream connection's buffers or a bulk ring may fail. */
  static final long MEMLOCK_ENOUGH = 64L << 20;

  private final PrintStream out;
  private final Environment env;
  private final List<String> problems = new ArrayList<>();
  private final List<String> notes = new ArrayList<>();

  @Option(names = "--provider", description = "soft, native or auto (default: what"
      + " pekko-rdma.provider says, auto unless configured).")
  String provider;

  @Option(names = "--require-device", description = "Count running on the software provider"
      + " for want of an RDMA device as a problem (exit 1), as a production host would.")
  boolean requireDevice;

  Doctor(PrintStream out, Environment env) {
    this.out = out;
    this.env = env;
  }

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  public static int run(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, SampleCommandLine::withClassName,
        new Doctor(out, Environment.LOCAL));
  }

  @Override
  public Integer call() {
    Providers.check(provider);
    Config config = provider == null ? ConfigFactory.load()
        : ConfigFactory.parseString("pekko-rdma.provider = " + provider)
            .withFallback(ConfigFactory.load());
    out.println("pekko-rdma doctor");
    RdmaProviders.Choice choice = RdmaProviders.choose(config);
    section("provider");
    out.println("  would use: " + (choice.factory() == null ? "none" : choice.provider())
        + " (" + choice.why() + ")");
    if (choice.factory() == null) {
      problem("the native provider was asked for and cannot serve (the reason is above)");
    } else if (choice.provider().equals("soft")
        && !config.getString("pekko-rdma.provider").equals("soft")) {
      if (requireDevice) {
        problem("no RDMA device, and --require-device asks for one (the reason is above)");
      } else {
        notes.add("no RDMA device: the software provider serves; fine for development and tests"
            + " (--require-device makes this a problem)");
      }
    }
    environment(choice.factory() != null && choice.provider().equals("native"));
    if (choice.factory() != null) {
      try (RdmaProvider p = choice.factory().create(config.getConfig("pekko-rdma"))) {
        devices(p);
      }
    }
    section("verdict");
    for (String n : notes) out.println("  note: " + n);
    if (problems.isEmpty()) {
      out.println("  all well");
      return 0;
    }
    out.println("  " + problems.size() + " problem(s):");
    for (String p : problems) out.println("  - " + p);
    return 1;
  }

  private void section(String name) {
    out.println();
    out.println("[" + name + "]");
  }

  private void problem(String what) {
    problems.add(what);
  }

  /** {@code pinning}: the chosen provider pins registered memory (a real NIC). */
  private void environment(boolean pinning) {
    section("environment");
    out.println("  kernel: " + env.kernel());
    for (String lib : List.of("libibverbs.so.1", "librdmacm.so.1")) {
      String found = env.library(lib);
      out.println("  " + lib + ": " + (found == null ? "not found" : found));
    }
    long memlock = env.memlockLimit();
    out.println("  max locked memory (ulimit -l): " + (memlock < 0 ? "unlimited"
        : memlock / 1024 + " KiB"));
    if (pinning && memlock >= 0 && memlock < MEMLOCK_ENOUGH) {
      problem("the locked-memory limit is " + memlock / 1024 + " KiB: registering memory with a"
          + " real NIC pins it, and connections will fail to register their buffers. Raise it to"
          + " unlimited (ulimit -l unlimited; '* - memlock unlimited' in"
          + " /etc/security/limits.conf; LimitMEMLOCK=infinity for a systemd service)");
    }
  }

  private void devices(RdmaProvider p) {
    section("devices (" + p.name() + " provider)");
    List<RdmaDevice> devices = p.devices();
    if (devices.isEmpty()) {
      out.println("  none");
      problem("the " + p.name() + " provider lists no device");
      return;
    }
    boolean anyActive = false;
    List<InetAddress> cmAddresses = new ArrayList<>();
    for (RdmaDevice d : devices) {
      try (DeviceContext c = p.open(d)) {
        DeviceAttributes a = c.queryDevice();
        out.printf("  %s: transport %s, firmware %s, node GUID %016x, %d port(s); max_qp %d,"
            + " max_cq %d, max_mr %d, max_mr_size %d, max_inline_data %d%n", d.name(),
            d.transport(), a.firmwareVersion(), a.nodeGuid(), a.physPortCnt(), a.maxQp(),
            a.maxCq(), a.maxMr(), a.maxMrSize(), a.maxInlineData());
        for (int port = 1; port <= a.physPortCnt(); port++) {
          PortAttributes pa = c.queryPort(port);
          boolean active = pa.state() == PortState.ACTIVE;
          anyActive |= active;
          out.printf("    port %d: %s, MTU %d (max %d), link layer %s%n", port, pa.state(),
              pa.activeMtu().bytes, pa.maxMtu().bytes, pa.linkLayer());
          out.println("      counters: " + counters(c.queryPortCounters(port)));
          if (!active) {
            problem(d.name() + " port " + port + " is " + pa.state() + ": bring its link up"
                + " (ip link set <netdev> up, or check the cable and the subnet manager)");
          }
          boolean roceV2 = false;
          for (int i = 0; i < pa.gidTableLength(); i++) {
            Gid g;
            try {
              g = c.queryGid(port, i);
            } catch (RuntimeException e) {
              continue; // an empty entry
            }
            if (g.isZero()) continue;
            String type = env.gidType(d.name(), port, i);
            String netdev = env.gidNetdev(d.name(), port, i);
            out.printf("      GID[%d] %s%s%s%n", i, g, type == null ? "" : ", " + type,
                netdev == null ? "" : ", netdev " + netdev);
            if (type != null && type.contains("v2")) roceV2 = true;
            InetAddress ip = ipv4Of(g);
            if (ip != null && !cmAddresses.contains(ip)) cmAddresses.add(ip);
          }
          if (pa.linkLayer() == dev.pekkordma.verbs.LinkLayer.ETHERNET && active && !roceV2
              && p.name().equals("native")) {
            problem(d.name() + " port " + port + " has no RoCE v2 GID: give its netdev an IPv4"
                + " address (ip addr add ... dev <netdev>) so that rdma_cm can route over UDP");
          }
        }
      } catch (RuntimeException e) {
        out.println("  " + d.name() + ": cannot be opened: " + e.getMessage());
        problem(d.name() + " cannot be opened (" + e.getMessage() + "): check the permissions"
            + " of /dev/infiniband/uverbs*");
      }
    }
    if (!anyActive) problem("no port of any device is ACTIVE");
    if (p.name().equals("soft")) cmAddresses = env.localAddresses(); // its CM takes any of them
    cm(p, cmAddresses);
  }

  /** Binds an rdma_cm id to each address a server could listen on: what a server would get. */
  private void cm(RdmaProvider p, List<InetAddress> addresses) {
    section("rdma_cm");
    if (addresses.isEmpty()) {
      out.println("  no IPv4 address in any GID table: a server can bind only by hand-made QPs");
      problem("rdma_cm has no address to bind: give an RDMA-capable netdev an IPv4 address");
      return;
    }
    try (CmEventChannel ch = p.createCmEventChannel()) {
      for (InetAddress a : addresses) {
        CmId id = ch.createId("doctor");
        try {
          id.bind(new InetSocketAddress(a, 0));
          out.println("  a server can bind " + a.getHostAddress() + " (port "
              + id.localAddress().getPort() + " was free)");
        } catch (RuntimeException e) {
          out.println("  binding " + a.getHostAddress() + " failed: " + e.getMessage());
          problem("rdma_cm cannot bind " + a.getHostAddress() + ": " + e.getMessage());
        } finally {
          id.close();
        }
      }
    } catch (RuntimeException e) {
      out.println("  no connection manager: " + e.getMessage());
      problem("no rdma_cm event channel (" + e.getMessage() + "): install librdmacm1 and load"
          + " rdma_ucm (modprobe rdma_ucm)");
    }
  }

  /** The counters a user watches, those the device keeps. */
  static String counters(PortCounters c) {
    StringBuilder b = new StringBuilder();
    count(b, "packets sent", c.packetsSent());
    count(b, "received", c.packetsReceived());
    count(b, "RNR NAKs received", c.rnrNaksReceived());
    count(b, "sent", c.rnrNaksSent());
    count(b, "retries", c.retries());
    count(b, "retries spent", c.retriesExceeded());
    count(b, "RNR retries spent", c.rnrRetriesExceeded());
    return b.length() == 0 ? "none kept by the device" : b.toString();
  }

  private static void count(StringBuilder b, String what, long n) {
    if (n == PortCounters.NOT_COUNTED) return;
    if (b.length() > 0) b.append(", ");
    b.append(what).append(' ').append(n);
  }

  /** The IPv4 address in an IPv4-mapped GID (::ffff:a.b.c.d), or null. */
  static InetAddress ipv4Of(Gid g) {
    for (int i = 0; i < 10; i++) if (g.byteAt(i) != 0) return null;
    if (g.byteAt(10) != (byte) 0xff || g.byteAt(11) != (byte) 0xff) return null;
    try {
      return InetAddress.getByAddress(new byte[] {g.byteAt(12), g.byteAt(13), g.byteAt(14),
          g.byteAt(15)});
    } catch (java.net.UnknownHostException e) {
      return null;
    }
  }
}
