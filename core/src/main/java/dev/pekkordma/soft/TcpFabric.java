package dev.pekkordma.soft;

import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.config.RdmaSettings.SoftSettings;
import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.verbs.Gid;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fabric between processes: each process listens on one TCP port and opens one {@link
 * FabricLink} to each process it sends requests to; the other side serves it as an {@link
 * InboundConnection} and executes the requests against its own memory, so one-sided operations
 * need no code of the target application. Inbound connections are capped and served by a
 * bounded pool; each must prove which process it stands for before any frame is read.
 */
final class TcpFabric {
  private static final Logger LOG = LoggerFactory.getLogger(TcpFabric.class);
  /** How long a nonce of ours stays provable: a handshake's time, generously. */
  private static final long NONCE_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final SoftFabric fabric;
  private final ServerSocket server;
  private final FabricAddress address;
  private volatile int handshakeMillis;
  private volatile int frameMillis;
  private volatile int maxConnections;
  private final Map<FabricAddress, FabricLink> links = new ConcurrentHashMap<>();
  private final Map<ByteBuffer, Long> nonces = new ConcurrentHashMap<>();
  private final SecureRandom random = new SecureRandom();
  private volatile Semaphore slots;
  private final ThreadPoolExecutor pool;
  private final RefusalLog refusals = new RefusalLog(LOG, "soft fabric");
  private final SoftTls tls;

  private TcpFabric(SoftFabric fabric, ServerSocket server, FabricAddress address,
      SoftSettings s, SoftTls tls) {
    this.fabric = fabric;
    this.tls = tls;
    this.server = server;
    this.address = address;
    this.handshakeMillis = millis(s.fabricHandshakeTimeout.toMillis());
    this.frameMillis = millis(s.fabricFrameTimeout.toMillis());
    this.maxConnections = s.fabricMaxConnections;
    this.slots = new Semaphore(maxConnections);
    AtomicInteger threads = new AtomicInteger();
    this.pool = new ThreadPoolExecutor(0, maxConnections, 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, "soft-rdma-fabric-in-" + threads.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
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
      ServerSocket socket = new ServerSocket();
      socket.bind(new InetSocketAddress(ip, s.fabricPort), 128);
      InetAddress advertised = s.fabricAdvertisedHost.isEmpty() ? ip
          : InetAddress.getByName(s.fabricAdvertisedHost);
      if (advertised.getAddress().length != 4 || advertised.isAnyLocalAddress()) {
        socket.close();
        throw new IllegalArgumentException("pekko-rdma.soft.fabric.advertised-host must be an"
            + " IPv4 address peers can reach (with host " + s.fabricHost + ", set it), was '"
            + s.fabricAdvertisedHost + "'");
      }
      int port = s.fabricAdvertisedPort != 0 ? s.fabricAdvertisedPort : socket.getLocalPort();
      TcpFabric f = new TcpFabric(fabric, socket,
          new FabricAddress(advertised.getAddress(), port), s, tls);
      if (!ip.isLoopbackAddress() && !tls.enabled()) {
        LOG.warn("soft fabric listens on {}:{}, which other machines may reach, without TLS:"
            + " anyone who can reach it can reach registered memory of this process; set"
            + " pekko-rdma.soft.tls.enabled = on, or bind the loopback address"
            + " (pekko-rdma.soft.fabric.host)", s.fabricHost, socket.getLocalPort());
      }
      Thread t = new Thread(f::acceptLoop, "soft-rdma-fabric-accept-" + socket.getLocalPort());
      t.setDaemon(true);
      t.start();
      return f;
    } catch (IOException e) {
      throw new UncheckedIOException("soft fabric cannot listen on " + s.fabricHost + ":"
          + s.fabricPort + " (pekko-rdma.soft.fabric.host/port)", e);
    }
  }

  /**
   * Changes the limits the first provider's settings gave (the fabric is one per JVM): for tests
   * that need short timeouts or few connections. Connections already served keep theirs.
   */
  void limits(int maxConnections, int handshakeMillis, int frameMillis) {
    this.maxConnections = maxConnections;
    this.slots = new Semaphore(maxConnections);
    pool.setMaximumPoolSize(maxConnections);
    this.handshakeMillis = handshakeMillis;
    this.frameMillis = frameMillis;
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
    Socket s = new Socket();
    try {
      s.setTcpNoDelay(true);
      s.connect(to.socketAddress(), handshakeMillis);
      s.setSoTimeout(handshakeMillis);
      s = tls.client(s, "the soft fabric at " + to);
      FabricConnection c = new FabricConnection(s, to.toString(), frameMillis);
      FabricWire.Handshake hello = new FabricWire.Handshake();
      hello.kind = FabricWire.HELLO;
      System.arraycopy(address.ip(), 0, hello.address, 0, 4);
      hello.port = address.port();
      ByteBuffer nonce = issueNonce(hello.nonce);
      try {
        c.writeHandshake(hello);
        FabricWire.Handshake answer = FabricWire.Handshake.decode(c.readHandshake(),
            FabricWire.WELCOME, FabricWire.REFUSED);
        if (answer.kind != FabricWire.WELCOME) {
          throw new IOException("the soft fabric at " + to + " refused this process ("
              + address + "): it could not confirm this process's address with it");
        }
      } finally {
        nonces.remove(nonce);
      }
      c.established();
      return c;
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /** The server side of a connection another process opened, before its handshake. */
  FabricConnection serverSide(Socket s, String remote) throws IOException {
    s.setTcpNoDelay(true);
    s.setSoTimeout(handshakeMillis);
    return new FabricConnection(tls.server(s, remote), remote, frameMillis);
  }

  /** Asks the fabric at {@code claimed} whether it issued {@code nonce}: proof of identity. */
  boolean prove(FabricAddress claimed, byte[] nonce) {
    try (Socket plain = new Socket()) {
      plain.connect(claimed.socketAddress(), handshakeMillis);
      plain.setSoTimeout(handshakeMillis);
      Socket s = tls.client(plain, "the soft fabric at " + claimed);
      FabricConnection c = new FabricConnection(s, claimed.toString(), frameMillis);
      FabricWire.Handshake ask = new FabricWire.Handshake();
      ask.kind = FabricWire.PROVE;
      System.arraycopy(nonce, 0, ask.nonce, 0, nonce.length);
      c.writeHandshake(ask);
      FabricWire.Handshake answer = FabricWire.Handshake.decode(c.readHandshake(),
          FabricWire.PROVEN, FabricWire.NOT_PROVEN);
      return answer.kind == FabricWire.PROVEN;
    } catch (IOException | RuntimeException e) {
      LOG.debug("soft fabric: cannot confirm the fabric at {}: {}", claimed, e.toString());
      return false;
    }
  }

  private ByteBuffer issueNonce(byte[] into) {
    random.nextBytes(into);
    ByteBuffer key = ByteBuffer.wrap(into.clone());
    long now = System.nanoTime();
    nonces.values().removeIf(expiry -> expiry - now < 0);
    nonces.put(key, now + NONCE_NANOS);
    return key;
  }

  /** True once for a nonce a connection of ours is handshaking with. */
  boolean consumeNonce(byte[] nonce) {
    Long expiry = nonces.remove(ByteBuffer.wrap(nonce));
    return expiry != null && expiry - System.nanoTime() > 0;
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      Socket s;
      try {
        s = server.accept();
      } catch (IOException e) {
        if (server.isClosed()) return;
        LOG.warn("soft fabric: accepting a connection failed: {}", e.toString());
        continue;
      }
      Semaphore slots = this.slots;
      if (!slots.tryAcquire()) {
        refusals.refuse(String.valueOf(s.getRemoteSocketAddress()).replaceFirst("^/", ""),
            maxConnections + " connections are open already"
                + " (pekko-rdma.soft.fabric.max-connections)");
        closeQuietly(s);
        continue;
      }
      try {
        pool.execute(() -> {
          try {
            new InboundConnection(this, s).run();
          } finally {
            slots.release();
          }
        });
      } catch (RuntimeException e) { // the pool is shut down: the JVM is ending
        slots.release();
        closeQuietly(s);
      }
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // refusing is all we wanted
    }
  }

  private static int millis(long ms) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, ms));
  }
}
