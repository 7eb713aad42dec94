package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * RC's timers across processes: a request nobody answers ends in RETRY_EXC_ERR after about
 * 4.096 us * 2^timeout * (retry_cnt + 1), a peer with no receive posted in RNR_RETRY_EXC_ERR
 * after its RNR retries, and the QP's error cause names the peer.
 */
class TransportTimerTest {
  private static final Duration T = Duration.ofSeconds(60);
  private OneQp fx;
  private DeviceContext ctx;
  private CompletionQueue cq;
  private QueuePair qp;
  private OffHeapBuffer memory;
  private MemoryRegion mr;

  @BeforeEach
  void setUp() {
    fx = new OneQp(1 << 20);
    ctx = fx.ctx;
    cq = fx.cq;
    qp = fx.qp;
    memory = fx.memory;
    mr = fx.mr;
  }

  @AfterEach
  void tearDown() {
    fx.close();
  }

  @Test
  void aPeerThatNeverAnswersEndsTheRequestInRetryExcErrWithinTheTimeoutTimesTheTries()
      throws Exception {
    try (RawFabricPeer silent = new RawFabricPeer()) {
      HostileFabric.connect(qp, silent.gid(1), HostileFabric.PEER_QPN, 14, 3);
      long expected = 4 * ((4096L << 14) / 1000); // 4 tries of 67 ms
      long took = timeOne(WrOpcode.RDMA_WRITE, WcStatus.RETRY_EXC_ERR);
      RawFabricPeer.Conn in = silent.awaitInbound(5000); // it did get the requests
      in.close();
      assertBetween(took, expected * 9 / 10, expected + 2000_000);
      String cause = qp.errorCause().orElseThrow();
      assertTrue(cause.contains("no answer") && cause.contains(silent.address().toString())
          && cause.contains("timeout 14, retry_cnt 3"), cause);
    }
  }

  @Test
  void aStoppedPeerProcessEndsTheRequestInRetryExcErrWithinTheTimeoutTimesTheTries()
      throws Exception {
    try (PeerJvm peer = PeerJvm.start("")) {
      peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      HostileFabric.connect(qp, peer.gid, peer.qpn, 15, 2); // 3 tries of 134 ms
      assertEquals(WcStatus.SUCCESS, post(WrOpcode.RDMA_WRITE, peer.address, peer.rkey),
          "a first write while the peer runs");
      peer.process.signal("STOP");
      try {
        long expected = 3 * ((4096L << 15) / 1000);
        long took = timeOne(WrOpcode.RDMA_WRITE, WcStatus.RETRY_EXC_ERR, peer.address,
            peer.rkey);
        assertBetween(took, expected * 9 / 10, expected + 2000_000);
        String cause = qp.errorCause().orElseThrow();
        assertTrue(cause.contains("no answer") && cause.contains(peer.fabric().toString()),
            cause);
      } finally {
        peer.process.signal("CONT");
      }
      peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aPeerProcessStoppedBeforeTheFirstRequestEndsItInTimeThoughTheConnectHangs()
      throws Exception {
    try (PeerJvm peer = PeerJvm.start("")) {
      peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      HostileFabric.connect(qp, peer.gid, peer.qpn, 15, 3); // 4 tries of 134 ms
      peer.process.signal("STOP"); // the link's handshake hangs (5 s) on a stopped process
      try {
        long expected = 4 * ((4096L << 15) / 1000);
        long took = timeOne(WrOpcode.RDMA_WRITE, WcStatus.RETRY_EXC_ERR, peer.address,
            peer.rkey);
        assertBetween(took, expected * 9 / 10, expected + 2000_000);
        assertTrue(qp.errorCause().orElseThrow().contains(peer.fabric().toString()));
      } finally {
        peer.process.signal("CONT");
      }
      peer.ask("EXIT", "BYE", T);
    }
  }

  @Test
  void aPeerWithNoReceivePostedEndsASendInRnrRetryExcErrNamingIt() throws Exception {
    try (PeerJvm peer = PeerJvm.start("")) {
      peer.connect(ctx.queryGid(1, 0), qp.qpNum(), 14, 3);
      HostileFabric.connect(qp, peer.gid, peer.qpn, 14, 3);
      qp.modify(new dev.pekkordma.verbs.QpAttributes().state(dev.pekkordma.verbs.QpState.RESET));
      qp.modify(dev.pekkordma.verbs.QpAttributes.toInit(1, HostileFabric.ACCESS));
      qp.modify(dev.pekkordma.verbs.QpAttributes.toRtr(
          dev.pekkordma.verbs.AddressVector.global(peer.gid, 0, 1), peer.qpn, 0,
          dev.pekkordma.verbs.Mtu.MTU_4096));
      qp.modify(dev.pekkordma.verbs.QpAttributes.toRts(0).timeout(14).retryCount(3).rnrRetry(1));
      assertEquals(WcStatus.RNR_RETRY_EXC_ERR, post(WrOpcode.SEND, 0, 0));
      String cause = qp.errorCause().orElseThrow();
      assertTrue(cause.contains("no receive posted") && cause.contains(peer.fabric().toString()),
          cause);
      peer.ask("EXIT", "BYE", T);
    }
  }

  private long timeOne(WrOpcode op, WcStatus expected) throws InterruptedException {
    return timeOne(op, expected, 0x1000, 0x1234);
  }

  /** Posts one request and returns how long its completion took, in microseconds. */
  private long timeOne(WrOpcode op, WcStatus expected, long raddr, int rkey)
      throws InterruptedException {
    long start = System.nanoTime();
    WcStatus status = post(op, raddr, rkey);
    long took = (System.nanoTime() - start) / 1000;
    assertEquals(expected, status, "after " + took + " us");
    return took;
  }

  private WcStatus post(WrOpcode op, long raddr, int rkey) throws InterruptedException {
    try (SendRequests s = new SendRequests(1, 1); WorkCompletions wc = new WorkCompletions(4)) {
      s.add(1, op, SendRequests.SIGNALED).sge(mr, 0, 4096);
      if (op != WrOpcode.SEND) s.rdma(raddr, rkey);
      qp.postSend(s);
      long deadline = System.nanoTime() + T.toNanos();
      while (System.nanoTime() < deadline) {
        if (cq.poll(wc) > 0) return wc.status(0);
        Thread.sleep(0, 100_000);
      }
      throw new AssertionError("no completion within " + T);
    }
  }

  private static void assertBetween(long micros, long low, long high) {
    assertTrue(micros >= low && micros <= high, "took " + micros + " us, expected between "
        + low + " and " + high);
  }
}
