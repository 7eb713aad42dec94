package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A link's reader thread may still be delivering an answer, or a protocol violation, of a
 * connection the QP has left (reset and connected again, here to the same peer, with the same
 * PSNs): neither reaches the QP's new connection. Only the link it is attached to answers or
 * fails it.
 */
class StaleLinkEventsTest {
  private static final int LENGTH = 64;
  private static final long OFFSET = 4096;

  private RawPeerQp fx;
  private QueuePair qp;
  private HostileFabric.Guarded region;

  @BeforeEach
  void setUp() throws Exception {
    fx = new RawPeerQp();
    qp = fx.qp;
    region = fx.region;
  }

  @AfterEach
  void tearDown() throws Exception {
    fx.close();
  }

  @Test
  void aLinkTheQpHasLeftNeitherAnswersNorFailsIt() throws Exception {
    SoftQp soft = (SoftQp) qp;
    fx.connect(20, 0);
    postRead(1);
    RawFabricPeer.Conn first = fx.server.awaitInbound(5000);
    first.readFrame(5000);
    FabricLink old = SoftFabric.get().tcp().link(fx.server.address());
    assertTrue(old.holds(soft), "the QP talks through the link it routed to");

    fx.connect(20, 0);
    postRead(2);
    RawFabricPeer.Conn second = fx.server.awaitInbound(5000);
    RawFabricPeer.Frame request = second.readFrame(5000);
    assertFalse(old.holds(soft), "the reset took the QP off its old link");
    byte[] before = region.read(OFFSET, LENGTH);

    // what the old link's reader may still deliver: a violation, and an answer to PSN 0
    soft.failByPeer(old, WcStatus.BAD_RESP_ERR, "a violation on a connection the QP has left");
    try (OffHeapBuffer stale = OffHeapBuffer.allocate(LENGTH)) {
      stale.put(0, pattern((byte) 0x11), 0, LENGTH);
      SoftPeer.Response r = new SoftPeer.Response();
      r.psn = request.psn;
      r.code = SoftPeer.Response.ACK;
      r.readLength = LENGTH;
      Segments bytes = new Segments(1);
      bytes.single(stale.address(), LENGTH);
      soft.requester.onResponse(r, new MemoryPayload().of(bytes), old);
    }
    try (WorkCompletions wc = new WorkCompletions(4)) {
      assertEquals(QpState.RTS, qp.state(), "failed by a link it left: " + qp.errorCause());
      assertEquals(0, fx.cq.poll(wc), "completed by an answer on a link it left");
      assertArrayEquals(before, region.read(OFFSET, LENGTH), "a stale answer placed bytes");

      // the live link's answer completes the read, with its bytes
      RawFabricPeer.Frame answer = new RawFabricPeer.Frame();
      answer.kind = FabricWire.RESPONSE;
      answer.srcDevice = request.destDevice;
      answer.destDevice = request.srcDevice;
      answer.destQpn = request.srcQpn;
      answer.srcQpn = HostileFabric.PEER_QPN;
      answer.psn = request.psn;
      answer.payloadLength = LENGTH;
      second.send(answer.withPayload(pattern((byte) 0x22), FabricWire.TRAILER_WHOLE));
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (fx.cq.poll(wc) == 0) {
        assertTrue(System.nanoTime() < deadline, "the read never completed");
        Thread.sleep(1);
      }
      assertEquals(WcStatus.SUCCESS, wc.status(0));
      assertEquals(2, wc.wrId(0));
      assertArrayEquals(pattern((byte) 0x22), region.read(OFFSET, LENGTH));
    } finally {
      first.close();
      second.close();
    }
  }

  private void postRead(long id) {
    try (SendRequests s = new SendRequests(1, 1)) {
      s.add(id, WrOpcode.RDMA_READ, SendRequests.SIGNALED).sge(region.mr, OFFSET, LENGTH)
          .rdma(0x10000, 0x777);
      qp.postSend(s);
    }
  }

  private static byte[] pattern(byte seed) {
    byte[] b = new byte[LENGTH];
    for (int i = 0; i < LENGTH; i++) b[i] = (byte) (seed + i);
    return b;
  }
}
