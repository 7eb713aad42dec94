package dev.pekkordma.soft;

import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.config.RdmaSettings.SoftSettings;
import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.verbs.Gid;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fabric between processes: each process listens on one TCP port and opens one {@link
 * FabricLink} to each process it sends requests to; the other side serves it as an {@link
 * InboundConnection} and executes the requests against its own memory, so one-sided operations
 * need no code of the target application. Connections come in through the {@link FabricGate},
 * prove which process they stand for ({@link FabricHandshakes}) and are then served ({@link
 * ServedProcesses}); each stage is bounded on its own, so peers that prove nothing never hold
 * the places of those that did.
 */
final class TcpFabric {
  private static final Logger LOG = LoggerFactory.getLogger(TcpFabric.class);

  private final SoftFabric fabric;
  private final FabricAddress address;
  private volatile FabricLimits limits;
  private volatile SharedMemoryConfig sharedMemory;
  private final Map<FabricAddress, FabricLink> links = new ConcurrentHashMap<>();
  private final Nonces nonces = new Nonces();
  private final RefusalLog refusals = new RefusalLog(LOG, "soft fabric");
  private final ScheduledThreadPoolExecutor timers;
  private final FabricHandshakes handshakes;
  private final ServedProcesses served;
  private final ConnectionWatch watch;
  private final FabricGate gate;
  private final SoftTls tls;

  private TcpFabric(SoftFabric fabric, ServerSocketChannel server, FabricAddress address,
      SoftSettings s, SoftTls tls) throws IOException {
    this.fabric = fabric;
    this.address = address;
    this.tls = tls;
    this.limits = FabricLimits.of(s);
    this.sharedMemory = SharedMemoryConfig.of(s);
    this.timers = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "soft-rdma-fabric-deadlines");
      t.setDaemon(true);
      return t;
    });
    timers.setRemoveOnCancelPolicy(true);
    this.handshakes = new FabricHandshakes(this, tls, limits.maxHandshakes());
    this.served = new ServedProcesses(this);
    this.watch = new ConnectionWatch(this, timers);
    this.gate = new FabricGate(this, server);
  }

  static TcpFabric start(RdmaSettings settings, SoftFabric fabric) {
    SoftSettings s = settings.soft();
    SoftTls tls = SoftTls.from(settings);
    try {
      InetAddress ip = InetAddress.getByName(s.fabricHost);
      if (ip.getAddress().length != 4) {
        throw new IllegalArgumentException("pekko-rdma.soft.fabric.host must be an IPv4 address, was "
            + s.fabricHost);
      }
      ServerSocketChannel server = ServerSocketChannel.open();
      server.bind(new InetSocketAddress(ip, s.fabricPort), 128);
      int localPort = server.socket().getLocalPort();
      InetAddress advertised = s.fabricAdvertisedHost.isEmpty() ? ip
          : InetAddress.getByName(s.fabricAdvertisedHost);
      if (advertised.getAddress().length != 4 || advertised.isAnyLocalAddress()) {
        server.close();
        throw new IllegalArgumentException("pekko-rdma.soft.fabric.advertised-host must be an"
            + " IPv4 address peers can reach (with host " + s.fabricHost + ", set it), was '"
            + s.fabricAdvertisedHost + "'");
      }
      int port = s.fabricAdvertisedPort != 0 ? s.fabricAdvertisedPort : localPort;
      TcpFabric f = new TcpFabric(fabric, server,
          new FabricAddress(advertised.getAddress(), port), s, tls);
      if (!ip.isLoopbackAddress() && !tls.enabled()) {
        LOG.warn("soft fabric listens on {}:{}, which other machines may reach, without TLS:"
            + " anyone who can reach it can reach registered memory of this process; set"
            + " pekko-rdma.soft.tls.enabled = on, or bind the loopback address"
            + " (pekko-rdma.soft.fabric.host)", s.fabricHost, localPort);
      }
      f.watch.start();
      f.gate.start();
      return f;
    } catch (IOException e) {
      throw new UncheckedIOException("soft fabric cannot listen on " + s.fabricHost + ":"
          + s.fabricPort + " (pekko-rdma.soft.fabric.host/port)", e);
    }
  }

  /**
   * Changes the limits the first provider's settings gave (the fabric is one per JVM): for tests
   * that need short deadlines or few places. Connections already served keep their places.
   */
  void limits(FabricLimits limits) {
    this.limits = limits;
    handshakes.resize(limits.maxHandshakes());
  }

  FabricLimits limits() {
    return limits;
  }

  /**
   * Changes how links offer shared memory from now on (the fabric is one per JVM): for tests that
   * need it off, or a directory of their own. Links already made keep theirs.
   */
  void sharedMemory(SharedMemoryConfig config) {
    this.sharedMemory = config;
  }

  SharedMemoryConfig sharedMemory() {
    return sharedMemory;
  }

  /** Where peers reach this process: what its devices' GIDs carry. */
  FabricAddress address() {
    return address;
  }

  RefusalLog refusals() {
    return refusals;
  }

  SoftDevice device(int serial) {
    return fabric.deviceBySerial(serial);
  }

  long maxMessage() {
    return fabric.maxMessage();
  }

  // ---------------------------------------------------------------- routes

  SoftPeer peer(Gid gid) {
    byte[] ip = {gid.byteAt(8), gid.byteAt(9), gid.byteAt(10), gid.byteAt(11)};
    int port = ((gid.byteAt(12) & 0xff) << 8) | (gid.byteAt(13) & 0xff);
    return new RemotePeer(this, link(new FabricAddress(ip, port)), gid);
  }

  /** The link to the process at {@code address}: the live one, or a new one. */
  FabricLink link(FabricAddress address) {
    return links.compute(address,
        (a, old) -> old == null || old.retired() ? new FabricLink(this, a) : old);
  }

  /** A retired link leaves the table (unless a new one took its place). */
  void forget(FabricLink link) {
    links.remove(link.address(), link);
  }

  static int serialOf(Gid gid) {
    return ((gid.byteAt(14) & 0xff) << 8) | (gid.byteAt(15) & 0xff);
  }

  /** The process at {@code identity} broke the protocol on a connection it opened to us. */
  void violated(FabricAddress identity, String why) {
    FabricLink link = links.get(identity);
    if (link != null) link.violated(null, why);
  }

  // ---------------------------------------------------------------- connections

  /** Opens a connection to the fabric at {@code to} and proves to it who we are. */
  FabricConnection connect(FabricAddress to) throws IOException {
    return handshakes.connect(to);
  }

  /** Whether a QP of this process is connected to a device of the process at {@code process}. */
  boolean talksTo(FabricAddress process) {
    FabricLink link = links.get(process);
    return link != null && link.holdsAny();
  }

  /** A deadline of {@code handshake-timeout} from now. */
  Deadline deadline(Runnable onExpiry) {
    return deadline(1, onExpiry);
  }

  /** A deadline of {@code times} handshake timeouts from now. */
  Deadline deadline(int times, Runnable onExpiry) {
    return new Deadline(timers, limits.handshake().toNanos() * times,
        "pekko-rdma.soft.fabric.handshake-timeout", onExpiry);
  }

  /**
   * Stops taking connections and closes the listener (the fabric is one per JVM and lives as
   * long as it: for tests that start one of their own).
   */
  void stop() {
    gate.stop();
    timers.shutdownNow();
  }

  /** A deadline of {@code time} from now, which {@code setting} gave. */
  Deadline deadline(java.time.Duration time, String setting, Runnable onExpiry) {
    return new Deadline(timers, time.toNanos(), setting, onExpiry);
  }

  /** The fabric's TLS (a disabled one on a plain fabric). */
  SoftTls tls() {
    return tls;
  }

  Nonces nonces() {
    return nonces;
  }

  FabricGate gate() {
    return gate;
  }

  FabricHandshakes handshakes() {
    return handshakes;
  }

  ServedProcesses served() {
    return served;
  }

  ConnectionWatch watch() {
    return watch;
  }
}
