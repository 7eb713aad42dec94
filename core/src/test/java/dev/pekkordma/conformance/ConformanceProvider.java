package dev.pekkordma.conformance;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.LinkLayer;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.time.Duration;
import java.util.List;

/**
 * The provider under test, shared by every conformance class of this JVM: the one named by the
 * system property {@code pekko-rdma.provider} (the suite defaults it to {@code soft}), its first
 * device (or {@code pekko-rdma.test.device}), an active port and a usable GID index. Written
 * against the verbs API only, so the native provider runs the very same tests.
 */
public final class ConformanceProvider implements AutoCloseable {
  public static final String PROVIDER_PROPERTY = "pekko-rdma.provider";
  /** The address CM servers bind to and clients connect to (192.0.2.x on the Soft-RoCE VM). */
  public static final String CM_ADDRESS_PROPERTY = "pekko-rdma.test.cm-address";
  /** Forces the GID index (otherwise: the first IPv4-mapped GID, else the first non-zero one). */
  public static final String GID_INDEX_PROPERTY = "pekko-rdma.test.gid-index";
  /** Forces the device (otherwise the first of the list). */
  public static final String DEVICE_PROPERTY = "pekko-rdma.test.device";

  /** How long anything that should happen may take. */
  public static final Duration TIMEOUT = Duration.ofSeconds(5);
  /** How long to watch for something that must not happen. */
  public static final Duration QUIET = Duration.ofMillis(200);

  private static final int GID_SCAN_LIMIT = 16;
  private static ConformanceProvider shared;

  public final RdmaProvider provider;
  public final RdmaDevice device;
  public final DeviceContext context;
  public final DeviceAttributes attributes;
  public final Endpoint endpoint;
  public final int port;
  public final PortAttributes portAttributes;
  public final int gidIndex;
  public final Gid gid;

  private ConformanceProvider(RdmaProvider provider) {
    this.provider = provider;
    DeviceContext ctx = null;
    try {
      List<RdmaDevice> devices = provider.devices();
      if (devices.isEmpty()) {
        throw new IllegalStateException("provider '" + provider.name() + "' lists no device");
      }
      this.device = chooseDevice(devices);
      ctx = provider.open(device);
      this.context = ctx;
      this.attributes = ctx.queryDevice();
      this.endpoint = Endpoint.find(ctx);
      this.port = endpoint.port();
      this.portAttributes = ctx.queryPort(port);
      this.gidIndex = endpoint.gidIndex();
      this.gid = endpoint.gid();
      System.out.println("[conformance] provider " + provider.name() + ", device " + device
          + ", " + endpoint);
    } catch (RuntimeException e) {
      if (ctx != null) ctx.close();
      provider.close();
      throw e;
    }
  }

  /** The JVM-wide instance (opened on first use, closed when the test run ends). */
  public static synchronized ConformanceProvider shared() {
    if (shared == null) {
      shared = new ConformanceProvider(loadProvider(ConfigFactory.empty()));
    }
    return shared;
  }

  static synchronized void closeShared() {
    if (shared != null) {
      try {
        shared.close();
      } finally {
        shared = null;
      }
    }
  }

  /** The provider name the suite runs with; sets the property to {@code soft} when absent. */
  public static synchronized String providerName() {
    String p = System.getProperty(PROVIDER_PROPERTY);
    if (p == null || p.isBlank()) {
      System.setProperty(PROVIDER_PROPERTY, "soft");
      p = "soft";
    }
    return p;
  }

  /** A new provider as the suite configures it, with {@code overrides} over everything. */
  public static RdmaProvider loadProvider(Config overrides) {
    providerName();
    ConfigFactory.invalidateCaches(); // system properties are read again
    return RdmaProviders.load(overrides.withFallback(ConfigFactory.load()));
  }

  /** The CM address tests bind and connect to. */
  public static String cmAddress() {
    return System.getProperty(CM_ADDRESS_PROPERTY, "127.0.0.1");
  }

  private static RdmaDevice chooseDevice(List<RdmaDevice> devices) {
    String wanted = System.getProperty(DEVICE_PROPERTY);
    if (wanted == null || wanted.isBlank()) return devices.get(0);
    for (RdmaDevice d : devices) {
      if (d.name().equals(wanted)) return d;
    }
    throw new IllegalStateException(DEVICE_PROPERTY + " = " + wanted + " but the devices are "
        + devices);
  }

  /** A route from this device to a QP at {@code remoteGid} / {@code remoteLid}. */
  public AddressVector addressTo(Gid remoteGid, int remoteLid) {
    return endpoint.addressTo(remoteGid, remoteLid);
  }

  /** A route to a QP on this very device. */
  public AddressVector loopback() {
    return endpoint.addressTo(gid, portAttributes.lid());
  }

  public Mtu mtu() {
    return endpoint.mtu();
  }

  @Override
  public void close() {
    try {
      context.close();
    } finally {
      provider.close();
    }
  }

  /** Where a device's QPs are: port, GID index, GID, LID, path MTU. */
  public record Endpoint(int port, int gidIndex, Gid gid, int lid, Mtu mtu, LinkLayer linkLayer) {

    /** The first active port (else port 1) and its GID as described on the class. */
    public static Endpoint find(DeviceContext ctx) {
      DeviceAttributes dev = ctx.queryDevice();
      int port = 1;
      for (int p = 1; p <= Math.max(1, dev.physPortCnt()); p++) {
        if (ctx.queryPort(p).state() == PortState.ACTIVE) {
          port = p;
          break;
        }
      }
      PortAttributes pa = ctx.queryPort(port);
      int index = -1;
      Gid gid = null;
      String forced = System.getProperty(GID_INDEX_PROPERTY);
      if (forced != null && !forced.isBlank()) {
        index = Integer.parseInt(forced.trim());
        gid = ctx.queryGid(port, index);
      } else {
        int firstNonZero = -1;
        Gid firstNonZeroGid = null;
        for (int i = 0; i < Math.min(GID_SCAN_LIMIT, Math.max(1, pa.gidTableLength())); i++) {
          Gid g;
          try {
            g = ctx.queryGid(port, i);
          } catch (RuntimeException e) {
            continue; // an empty entry may fail to query
          }
          if (g == null || g.isZero()) continue;
          if (firstNonZero < 0) {
            firstNonZero = i;
            firstNonZeroGid = g;
          }
          if (isIpv4Mapped(g)) {
            index = i;
            gid = g;
            break;
          }
        }
        if (index < 0) {
          index = firstNonZero;
          gid = firstNonZeroGid;
        }
      }
      if (index < 0 || gid == null || gid.isZero()) {
        throw new IllegalStateException("port " + port + " of " + ctx.device()
            + " has no non-zero GID among its first " + GID_SCAN_LIMIT
            + " entries; set -D" + GID_INDEX_PROPERTY);
      }
      Mtu mtu = pa.activeMtu() != null ? pa.activeMtu() : Mtu.MTU_1024;
      return new Endpoint(port, index, gid, pa.lid(), mtu, pa.linkLayer());
    }

    static boolean isIpv4Mapped(Gid g) {
      for (int i = 0; i < 10; i++) {
        if (g.byteAt(i) != 0) return false;
      }
      return g.byteAt(10) == (byte) 0xff && g.byteAt(11) == (byte) 0xff;
    }

    /** A GRH route (needed on Ethernet, harmless on InfiniBand) that also carries the LID. */
    public AddressVector addressTo(Gid remoteGid, int remoteLid) {
      return new AddressVector(linkLayer == LinkLayer.ETHERNET ? 0 : remoteLid, 0, port, true,
          remoteGid, gidIndex, 64, 0, 0);
    }
  }
}
