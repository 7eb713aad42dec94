package dev.pekkordma.soft.cm;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.soft.tls.SoftTls;
import java.net.InetAddress;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What all CM ids of one software provider share: the TLS every link goes through, the bounds a
 * peer cannot push past, the active side's links, and the bounded pool of threads that read and
 * write links (two per link, from its TCP connect or accept to its end; {@value #READY_THREADS}
 * of them wait ready while the provider is open).
 */
@InternalApi
public final class CmResources {
  static final String MAX_CONNECTIONS = "pekko-rdma.cm.max-connections";
  static final String MAX_PENDING = "pekko-rdma.cm.max-pending-handshakes";
  static final String CONNECT_TIMEOUT = "pekko-rdma.cm.connect-timeout";
  private static final Logger log = LoggerFactory.getLogger(CmResources.class);
  private static final AtomicInteger POOLS = new AtomicInteger();
  /**
   * Threads the pool keeps waiting: a link's each side (a reader and a writer) for one link this
   * process opens and one it accepts. A new link then hands its work to threads that run,
   * rather than start threads while its connect waits: on a busy machine a thread's start took
   * up to 3 ms of a first connect's 7 to 10.
   */
  static final int READY_THREADS = 4;

  final SoftTls tls;
  final int maxPendingHandshakes;
  final int maxConnections;
  final Duration connectTimeout;
  final CmLinks outgoing = new CmLinks(this);
  /** Reads RDMA_PS_UDP ids' sockets for SIDR messages. */
  final SidrService sidr = new SidrService();
  private final ThreadPoolExecutor threads;
  private final AtomicInteger links = new AtomicInteger();
  private final AtomicInteger conversations = new AtomicInteger();
  private final AtomicBoolean warnedInTheClear = new AtomicBoolean();
  private final AtomicBoolean warnedDatagrams = new AtomicBoolean();

  /** Reads the CM's bounds and sets up TLS ({@link SoftTls#from}) from {@code settings}. */
  public CmResources(RdmaSettings settings) {
    this(settings, SoftTls.from(settings));
  }

  public CmResources(RdmaSettings settings, SoftTls tls) {
    this.tls = tls;
    maxPendingHandshakes = settings.cmMaxPendingHandshakes();
    maxConnections = settings.cmMaxConnections();
    connectTimeout = settings.cmConnectTimeout();
    String prefix = "soft-cm-pool-" + POOLS.incrementAndGet() + "-";
    AtomicInteger n = new AtomicInteger();
    // no queue: a link gets its threads (a reader and a writer) at once or is refused
    threads = new ThreadPoolExecutor(Math.min(READY_THREADS, 2 * maxConnections),
        2 * maxConnections, 10, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, prefix + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    threads.prestartAllCoreThreads();
  }

  /**
   * Runs a link's reading {@code body} on a thread of the pool, named {@code name} meanwhile;
   * false when {@value #MAX_CONNECTIONS} links are being read already (or the provider closed):
   * see {@link #refusal}.
   */
  boolean start(String name, Runnable body) {
    return start(name, () -> { }, body);
  }

  /** As {@link #start(String, Runnable)}, running {@code now} on this thread once counted. */
  boolean start(String name, Runnable now, Runnable body) {
    if (links.incrementAndGet() > maxConnections) {
      links.decrementAndGet();
      return false;
    }
    try {
      now.run();
    } catch (RuntimeException | Error e) {
      links.decrementAndGet();
      throw e;
    }
    if (run(name, () -> {
      try {
        body.run();
      } finally {
        links.decrementAndGet();
      }
    })) {
      return true;
    }
    links.decrementAndGet();
    return false;
  }

  /** Runs a link's writing {@code body}: each read link has one, so no bound of its own. */
  boolean startWriter(String name, Runnable body) {
    return run(name, body);
  }

  private boolean run(String name, Runnable body) {
    try {
      threads.execute(() -> {
        Thread t = Thread.currentThread();
        String pooled = t.getName();
        t.setName(name);
        try {
          body.run();
        } catch (RuntimeException | Error e) {
          // a fault of ours, not the peer's: the thread goes back to the pool regardless
          log.error("soft CM: {} failed", name, e);
        } finally {
          t.setName(pooled);
        }
      });
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /** The most threads the pool has had at once (for tests). */
  int mostThreads() {
    return threads.getLargestPoolSize();
  }

  /** Why {@link #start} or {@link #openConversation} said no, naming the setting. */
  String refusal() {
    return threads.isShutdown() ? "the provider is closed"
        : maxConnections + " CM connections are open already (" + MAX_CONNECTIONS + ")";
  }

  /** Counts a new CM connection; false when {@value #MAX_CONNECTIONS} are open already. */
  boolean openConversation() {
    if (threads.isShutdown()) return false;
    if (conversations.incrementAndGet() <= maxConnections) return true;
    conversations.decrementAndGet();
    return false;
  }

  /** A CM connection counted by {@link #openConversation} is over. */
  void closeConversation() {
    conversations.decrementAndGet();
  }

  /**
   * Warns once per provider that a CM id is exposed to the network without TLS: listening on
   * or connecting to {@code address} that is not loopback (a wildcard listens on every interface).
   */
  void warnIfInTheClear(InetAddress address, String what) {
    if (tls.enabled() || address == null || address.isLoopbackAddress()) return;
    if (!warnedInTheClear.compareAndSet(false, true)) return;
    log.warn("soft CM: {} without TLS: whoever reaches the port can connect, and the CM's"
        + " handshakes and their private data cross the network in the clear; set"
        + " pekko-rdma.soft.tls.enabled = on in every process to authenticate and encrypt them"
        + " (said once per provider)", what);
  }

  /**
   * Warns once per provider, when TLS is on, that a datagram id's SIDR messages and multicast
   * datagrams are not under it: they are UDP datagrams, in the clear and unauthenticated.
   */
  void warnDatagramsOutsideTls(String what) {
    if (!tls.enabled() || !warnedDatagrams.compareAndSet(false, true)) return;
    log.warn("soft CM: {}: pekko-rdma.soft.tls protects connections, not datagrams; SIDR"
        + " messages and multicast datagrams cross the network in the clear, and anyone who"
        + " reaches the port or the group can send them (said once per provider)", what);
  }

  /** The provider closed: no new connection threads; those running end with their sockets. */
  public void shutdown() {
    threads.shutdown();
    sidr.shutdown();
  }
}
