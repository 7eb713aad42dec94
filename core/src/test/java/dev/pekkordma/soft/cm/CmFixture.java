package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A soft provider per test, CM helpers, and the check that every test gives back what it took. */
abstract class CmFixture {
  static final Duration WAIT = Duration.ofSeconds(5);
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(1);
  static final InetSocketAddress LOOPBACK_ANY_PORT = new InetSocketAddress("127.0.0.1", 0);

  RdmaProvider provider;
  private final List<CmEventChannel> channels = new ArrayList<>();

  @BeforeEach
  void openProvider() {
    provider = newProvider();
  }

  static RdmaProvider newProvider() {
    return newProvider("");
  }

  /** A soft provider as {@link #newProvider()}, with {@code config} (HOCON) over it. */
  static RdmaProvider newProvider(String config) {
    return RdmaProviders.load(ConfigFactory.parseString(config)
        .withFallback(ConfigFactory.parseString("pekko-rdma.provider = soft\n"
            + "pekko-rdma.cm.connect-timeout = " + CONNECT_TIMEOUT.toMillis() + "ms"))
        .withFallback(ConfigFactory.load()));
  }

  /** Every test closes what it opened; then the counts are back where a new provider starts. */
  @AfterEach
  void checkNothingLeaks() {
    try {
      for (CmEventChannel c : channels) c.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    } finally {
      provider.close();
    }
  }

  CmEventChannel channel() {
    return channel(provider);
  }

  /** A channel of {@code p}; closed after the test (before {@code p} is, if the test made it). */
  CmEventChannel channel(RdmaProvider p) {
    CmEventChannel c = p.createCmEventChannel();
    channels.add(c);
    return c;
  }

  static CmEvent expect(CmEventChannel channel, CmEventType type) {
    CmEvent e = channel.awaitEvent(WAIT);
    assertNotNull(e, "no event within " + WAIT + ", expected " + type);
    assertEquals(type, e.type(), "got " + e);
    return e;
  }

  static void expectNone(CmEventChannel channel, Duration within) {
    CmEvent e = channel.awaitEvent(within);
    assertNull(e, () -> "unexpected event " + e + " on " + e.id());
  }

  /** A listener on 127.0.0.1 at an ephemeral port. */
  static CmId listener(CmEventChannel channel) {
    CmId id = channel.createId("listener");
    id.bind(LOOPBACK_ANY_PORT);
    id.listen(8);
    return id;
  }

  /** A client id with address and route resolved towards {@code to}. */
  static CmId resolved(CmEventChannel channel, InetSocketAddress to) {
    CmId id = channel.createId("client");
    id.resolveAddress(null, to, WAIT);
    expect(channel, CmEventType.ADDR_RESOLVED);
    id.resolveRoute(WAIT);
    expect(channel, CmEventType.ROUTE_RESOLVED);
    return id;
  }

  /**
   * Connects a new id of {@code client} to {@code listener} on {@code server} with {@code
   * privateData}, accepts, sees both sides established, disconnects and destroys both; returns
   * the private data the request carried.
   */
  static byte[] connectOnceAndEnd(CmEventChannel client, CmEventChannel server, CmId listener,
      byte[] privateData) {
    return connectAndEnd(resolved(client, listener.localAddress()), client, server, privateData);
  }

  /** As {@link #connectOnceAndEnd}, for {@code c}, an id of {@code client} resolved already. */
  static byte[] connectAndEnd(CmId c, CmEventChannel client, CmEventChannel server,
      byte[] privateData) {
    c.connect(ConnectionParameters.withPrivateData(privateData));
    CmEvent request = expect(server, CmEventType.CONNECT_REQUEST);
    request.id().accept(ConnectionParameters.defaults());
    expect(client, CmEventType.ESTABLISHED);
    expect(server, CmEventType.ESTABLISHED);
    c.disconnect();
    expect(client, CmEventType.DISCONNECTED);
    expect(server, CmEventType.DISCONNECTED);
    request.id().close();
    c.close();
    return request.privateData();
  }

  /** What one side of a connection uses: PD, CQ, QP made through the CM, and a buffer. */
  static final class Side implements AutoCloseable {
    final CmId id;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final QueuePair qp;
    final OffHeapBuffer buffer = OffHeapBuffer.allocate(4096);
    final MemoryRegion mr;
    final WorkCompletions wc = new WorkCompletions(16);

    Side(CmId id) {
      this.id = id;
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(32, null);
      qp = id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq));
      mr = pd.registerMemory(buffer,
          Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
    }

    void postRecvs(long firstWrId, int n) {
      try (RecvRequests r = new RecvRequests(n, 1)) {
        for (int i = 0; i < n; i++) r.add(firstWrId + i).sge(mr, 1024 + 256L * i, 256);
        qp.postRecv(r);
      }
    }

    /** Polls until {@code n} completions came; their statuses by wr id order of arrival. */
    List<String> completions(int n) {
      List<String> got = new ArrayList<>();
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (got.size() < n && System.nanoTime() < deadline) {
        int k = cq.poll(wc);
        for (int i = 0; i < k; i++) got.add(wc.wrId(i) + ":" + wc.status(i));
        if (k == 0) LockSupport.parkNanos(100_000); // the machine is shared: do not spin
      }
      assertEquals(n, got.size(), "completions " + got);
      return got;
    }

    static String flushed(long wrId) {
      return wrId + ":" + WcStatus.WR_FLUSH_ERR;
    }

    /** Frees the verbs resources and the id (the id's context goes last, with the id). */
    @Override
    public void close() {
      id.destroyQp();
      mr.close();
      buffer.close();
      wc.close();
      cq.close();
      pd.close();
      id.close();
    }
  }
}
