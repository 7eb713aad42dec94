package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.AtomicCapability;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WrOpcode;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every work request opcode on a connected RC pair, checked down to the byte. */
class WorkRequestConformanceTest extends ConformanceTest {

  private static final int SENTINEL = 0x5a;

  @Test
  void send() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.fill(SENTINEL);
      byte[] data = Region.pattern(100, 1);
      a.put(10, data);
      postRecv(p.b, 21, b, 512, 256);
      send(p.a, 11, SIGNALED, a, 10, 100);
      Wc s = Completions.awaitSuccess(p.aSendCq, "A send CQ", 11, WcOpcode.SEND);
      assertEquals(p.a.qpNum(), s.qpNum(), "qp_num of " + s);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 21, WcOpcode.RECV);
      assertEquals(100, r.byteLen(), "byte_len of " + r);
      assertEquals(p.b.qpNum(), r.qpNum(), "qp_num of " + r);
      assertFalse(r.hasImm(), "WITH_IMM flag of " + r);
      assertBytes(data, b.get(512, 100), "received data");
      assertBytes(Region.filled(512, SENTINEL), b.get(0, 512), "before the receive buffer");
      assertBytes(Region.filled(4096 - 612, SENTINEL), b.get(612, 4096 - 612),
          "after the received bytes");
      Completions.expectNone(p.aRecvCq, "A recv CQ");
      Completions.expectNone(p.bSendCq, "B send CQ");
    }
  }

  @Test
  void zeroLengthSend() {
    try (RcPair p = RcPair.open(fx);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.fill(SENTINEL);
      postRecv(p.b, 1, b, 0, 64);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(2, WrOpcode.SEND, SIGNALED);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 2, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 1, WcOpcode.RECV);
      assertEquals(0, r.byteLen(), "byte_len of a zero-length send: " + r);
      assertBytes(Region.filled(4096, SENTINEL), b.all(), "receive buffer after 0 bytes");
    }
  }

  @Test
  void sendWithImmediate() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      byte[] data = Region.pattern(64, 2);
      a.put(0, data);
      postRecv(p.b, 22, b, 0, 256);
      sendImm(p.a, 12, SIGNALED, a, 0, 64, 0xCAFEBABE);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 12, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 22, WcOpcode.RECV);
      assertTrue(r.hasImm(), "WITH_IMM flag of " + r);
      assertEquals(0xCAFEBABE, r.imm(), "immediate of " + r);
      assertEquals(64, r.byteLen(), "byte_len (without the immediate) of " + r);
      assertBytes(data, b.get(0, 64), "received data");
    }
  }

  @Test
  void rdmaWrite() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.fill(SENTINEL);
      byte[] data = Region.pattern(300, 3);
      a.put(0, data);
      postRecv(p.b, 23, b, 2048, 64); // an RDMA write must not consume it
      write(p.a, 13, SIGNALED, a, 0, 300, b.address(64), b.rkey());
      Wc s = Completions.awaitSuccess(p.aSendCq, "A send CQ", 13, WcOpcode.RDMA_WRITE);
      assertEquals(p.a.qpNum(), s.qpNum(), "qp_num of " + s);
      assertBytes(data, b.get(64, 300), "written bytes");
      assertBytes(Region.filled(64, SENTINEL), b.get(0, 64), "before the written range");
      assertBytes(Region.filled(4096 - 364, SENTINEL), b.get(364, 4096 - 364),
          "after the written range");
      Completions.expectNone(p.bRecvCq, "B recv CQ (an RDMA write consumes no receive)");
    }
  }

  /**
   * IB's C9-88: a zero-length RDMA WRITE carries no address or key the responder checks (rxe
   * does not look at them either), and touches nothing.
   */
  @Test
  void aZeroLengthWriteChecksNoKeyAndTouchesNothing() {
    try (RcPair p = RcPair.open(fx);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.fill(SENTINEL);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(15, WrOpcode.RDMA_WRITE, SIGNALED).rdma(0x10, b.rkey() ^ 0x5a5a00);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 15, WcOpcode.RDMA_WRITE);
      assertBytes(Region.filled(4096, SENTINEL), b.all(), "nothing written");
      assertEquals(QpState.RTS, p.b.state(), "the responder is untouched");
    }
  }

  /** A wr_id is the application's 64 bits, whatever they are: -1 and -2 come back as such. */
  @Test
  void anyWrIdComesBack() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      postRecv(p.b, -1, b, 0, 64);
      postRecv(p.b, Long.MIN_VALUE, b, 64, 64);
      send(p.a, -2, SIGNALED, a, 0, 8);
      send(p.a, Long.MAX_VALUE, SIGNALED, a, 0, 8);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", -2, WcOpcode.SEND);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", Long.MAX_VALUE, WcOpcode.SEND);
      Completions.awaitSuccess(p.bRecvCq, "B recv CQ", -1, WcOpcode.RECV);
      Completions.awaitSuccess(p.bRecvCq, "B recv CQ", Long.MIN_VALUE, WcOpcode.RECV);
    }
  }

  @Test
  void rdmaWriteWithImmediate() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.fill(SENTINEL);
      byte[] data = Region.pattern(200, 4);
      a.put(0, data);
      postRecv(p.b, 24, b, 3000, 64);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(14, WrOpcode.RDMA_WRITE_WITH_IMM, SIGNALED).sge(a.mr, 0, 200)
            .rdma(b.address(100), b.rkey()).immediate(0x01020304);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 14, WcOpcode.RDMA_WRITE);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 24, WcOpcode.RECV_RDMA_WITH_IMM);
      assertTrue(r.hasImm(), "WITH_IMM flag of " + r);
      assertEquals(0x01020304, r.imm(), "immediate of " + r);
      assertEquals(200, r.byteLen(), "byte_len of " + r);
      assertEquals(p.b.qpNum(), r.qpNum(), "qp_num of " + r);
      assertBytes(data, b.get(100, 200), "written bytes");
      assertBytes(Region.filled(64, SENTINEL), b.get(3000, 64),
          "the receive buffer (the data goes to the remote address)");
    }
  }

  @Test
  void rdmaWriteWithImmediateIntoAReceiveWithoutBuffer() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      a.put(0, Region.pattern(32, 9));
      postRecvNoSge(p.b, 25);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(15, WrOpcode.RDMA_WRITE_WITH_IMM, SIGNALED).sge(a.mr, 0, 32)
            .rdma(b.address(), b.rkey()).immediate(7);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 15, WcOpcode.RDMA_WRITE);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 25, WcOpcode.RECV_RDMA_WITH_IMM);
      assertEquals(7, r.imm(), "immediate of " + r);
      assertBytes(Region.pattern(32, 9), b.get(0, 32), "written bytes");
    }
  }

  @Test
  void rdmaRead() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 8192, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 8192, Link.ALL_REMOTE)) {
      a.fill(SENTINEL);
      byte[] data = Region.pattern(5000, 5); // more than one 4096-byte MTU
      b.put(1000, data);
      read(p.a, 16, SIGNALED, a, 7, 5000, b.address(1000), b.rkey());
      Wc s = Completions.awaitSuccess(p.aSendCq, "A send CQ", 16, WcOpcode.RDMA_READ);
      assertEquals(5000, s.byteLen(), "byte_len of " + s);
      assertBytes(data, a.get(7, 5000), "read bytes");
      assertBytes(Region.filled(7, SENTINEL), a.get(0, 7), "before the read range");
      assertBytes(Region.filled(8192 - 5007, SENTINEL), a.get(5007, 8192 - 5007),
          "after the read range");
      Completions.expectNone(p.bRecvCq, "B recv CQ");
    }
  }

  private void requireAtomics() {
    requireFeature(Feature.ATOMICS);
    skipUnless(fx.attributes.atomicCap() != AtomicCapability.NONE,
        "device reports atomicCap NONE");
  }

  @Test
  void atomicCompareAndSwap() {
    requireAtomics();
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.putLong(64, 100L);
      b.putLong(72, 0x1111111111111111L);
      a.putLong(0, -1L);
      atomic(p.a, 1, WrOpcode.ATOMIC_CMP_AND_SWP, a, 0, b.address(64), b.rkey(), 100L,
          0x0123456789abcdefL);
      Wc s = Completions.awaitSuccess(p.aSendCq, "A send CQ", 1, WcOpcode.COMP_SWAP);
      assertEquals(8, s.byteLen(), "byte_len of " + s);
      assertEquals(100L, a.getLong(0), "old value returned by a matching CAS");
      assertEquals(0x0123456789abcdefL, b.getLong(64), "remote value after a matching CAS");

      atomic(p.a, 2, WrOpcode.ATOMIC_CMP_AND_SWP, a, 8, b.address(64), b.rkey(), 999L, 5L);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 2, WcOpcode.COMP_SWAP);
      assertEquals(0x0123456789abcdefL, a.getLong(8), "old value returned by a failing CAS");
      assertEquals(0x0123456789abcdefL, b.getLong(64), "remote value after a failing CAS");
      assertEquals(0x1111111111111111L, b.getLong(72), "the next 8 bytes");
    }
  }

  @Test
  void atomicFetchAndAdd() {
    requireAtomics();
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.putLong(128, 200L);
      atomic(p.a, 1, WrOpcode.ATOMIC_FETCH_AND_ADD, a, 16, b.address(128), b.rkey(), 7L, 0L);
      Wc s = Completions.awaitSuccess(p.aSendCq, "A send CQ", 1, WcOpcode.FETCH_ADD);
      assertEquals(8, s.byteLen(), "byte_len of " + s);
      assertEquals(200L, a.getLong(16), "old value returned by fetch-and-add");
      assertEquals(207L, b.getLong(128), "remote value after fetch-and-add");
      atomic(p.a, 2, WrOpcode.ATOMIC_FETCH_AND_ADD, a, 24, b.address(128), b.rkey(), -300L, 0L);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 2, WcOpcode.FETCH_ADD);
      assertEquals(207L, a.getLong(24), "old value of the second add");
      assertEquals(-93L, b.getLong(128), "remote value after adding -300");
      // many adds in a row: each returns a distinct old value
      int n = 16;
      try (SendRequests sr = new SendRequests(n, 1)) {
        for (int i = 0; i < n; i++) {
          sr.add(100 + i, WrOpcode.ATOMIC_FETCH_AND_ADD, SIGNALED).sge(a.mr, 256 + 8L * i, 8)
              .atomic(b.address(128), b.rkey(), 1L, 0L);
        }
        p.a.postSend(sr);
      }
      List<Wc> done = Completions.await(p.aSendCq, n, "A send CQ");
      for (int i = 0; i < n; i++) {
        assertEquals(WcStatus.SUCCESS, done.get(i).status(), done.get(i).toString());
        assertEquals(100 + i, done.get(i).wrId(), "completion order " + done);
        assertEquals(-93L + i, a.getLong(256 + 8 * i), "old value of add " + i);
      }
      assertEquals(-93L + n, b.getLong(128), "remote value after " + n + " more adds");
    }
  }

  @Test
  void multiSgeGatherAndScatter() {
    skipUnless(fx.attributes.maxSge() >= 3, "device maxSge " + fx.attributes.maxSge() + " < 3");
    try (RcPair p = RcPair.builder().maxSge(3).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region a2 = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      b.fill(SENTINEL);
      byte[] p1 = Region.pattern(10, 11);
      byte[] p2 = Region.pattern(20, 12);
      byte[] p3 = Region.pattern(30, 13);
      a.put(100, p1);
      a2.put(0, p2);
      a.put(2000, p3);
      try (RecvRequests rr = new RecvRequests(1, 3)) {
        rr.add(30).sge(b.mr, 0, 25).sge(b.mr, 1000, 15).sge(b.mr, 3000, 40);
        p.b.postRecv(rr);
      }
      try (SendRequests sr = new SendRequests(1, 3)) {
        sr.add(31, WrOpcode.SEND, SIGNALED).sge(a.mr, 100, 10).sge(a2.mr, 0, 20)
            .sge(a.mr, 2000, 30);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 31, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 30, WcOpcode.RECV);
      assertEquals(60, r.byteLen(), "byte_len of a 3-SGE send: " + r);
      byte[] all = concat(p1, p2, p3);
      assertBytes(slice(all, 0, 25), b.get(0, 25), "first scatter element");
      assertBytes(slice(all, 25, 15), b.get(1000, 15), "second scatter element");
      assertBytes(slice(all, 40, 20), b.get(3000, 20), "third scatter element (20 of 40)");
      assertBytes(Region.filled(20, SENTINEL), b.get(3020, 20), "rest of the third element");
      assertBytes(Region.filled(1000 - 25, SENTINEL), b.get(25, 975), "between elements");

      // an RDMA write gathers too
      try (SendRequests sr = new SendRequests(1, 3)) {
        sr.add(32, WrOpcode.RDMA_WRITE, SIGNALED).sge(a.mr, 100, 10).sge(a2.mr, 0, 20)
            .sge(a.mr, 2000, 30).rdma(b.address(3500), b.rkey());
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 32, WcOpcode.RDMA_WRITE);
      assertBytes(all, b.get(3500, 60), "gathered RDMA write");
      // and an RDMA read scatters
      a.fill(0);
      try (SendRequests sr = new SendRequests(1, 3)) {
        sr.add(33, WrOpcode.RDMA_READ, SIGNALED).sge(a.mr, 0, 5).sge(a.mr, 500, 50)
            .sge(a.mr, 1000, 5).rdma(b.address(3500), b.rkey());
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 33, WcOpcode.RDMA_READ);
      assertBytes(slice(all, 0, 5), a.get(0, 5), "read scatter 1");
      assertBytes(slice(all, 5, 50), a.get(500, 50), "read scatter 2");
      assertBytes(slice(all, 55, 5), a.get(1000, 5), "read scatter 3");
    }
  }

  @Test
  void inlineDataIsCopiedAtPostTime() {
    int inline = Math.min(64, fx.attributes.maxInlineData());
    skipUnless(inline >= 16, "device maxInlineData " + fx.attributes.maxInlineData() + " < 16");
    try (RcPair p = RcPair.builder().maxInline(inline).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      assertTrue(p.a.capabilities().maxInlineData() >= inline,
          "capabilities().maxInlineData " + p.a.capabilities().maxInlineData() + " < " + inline);
      byte[] data = Region.pattern(inline, 14);
      a.put(0, data);
      postRecv(p.b, 40, b, 0, 256);
      try (SendRequests sr = new SendRequests(1, 1)) {
        // the lkey of inline data is not checked: the bytes are copied into the request
        sr.add(41, WrOpcode.SEND, SIGNALED | SendRequests.INLINE).sge(a.address(), inline,
            0x7fff_fff0);
        p.a.postSend(sr);
      }
      a.fill(0xEE); // reusable as soon as the post returned
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 41, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 40, WcOpcode.RECV);
      assertEquals(inline, r.byteLen(), "byte_len of " + r);
      assertBytes(data, b.get(0, inline), "inline data as it was at post time");

      a.put(0, data);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(42, WrOpcode.RDMA_WRITE, SIGNALED | SendRequests.INLINE).sge(a.mr, 0, inline)
            .rdma(b.address(1024), b.rkey());
        p.a.postSend(sr);
      }
      a.fill(0xEE);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 42, WcOpcode.RDMA_WRITE);
      assertBytes(data, b.get(1024, inline), "inline RDMA write as it was at post time");
    }
  }

  @Test
  void onlySignaledRequestsComplete() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      a.put(0, Region.pattern(4096, 15));
      try (SendRequests sr = new SendRequests(6, 1)) {
        for (int i = 0; i < 6; i++) {
          sr.add(50 + i, WrOpcode.RDMA_WRITE, i % 2 == 1 ? SIGNALED : 0).sge(a.mr, 100L * i, 100)
              .rdma(b.address(100L * i), b.rkey());
        }
        p.a.postSend(sr);
      }
      List<Wc> got = Completions.await(p.aSendCq, 3, "A send CQ");
      assertEquals(List.of(51L, 53L, 55L), got.stream().map(Wc::wrId).toList(),
          "wr_ids of the completions " + got);
      Completions.expectNone(p.aSendCq, "A send CQ (unsignaled requests)");
      assertBytes(a.get(0, 600), b.get(0, 600), "data of all 6 writes");
    }
  }

  @Test
  void signalAllSignalsEveryRequest() {
    try (RcPair p = RcPair.builder().signalAll(true).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      try (SendRequests sr = new SendRequests(4, 1)) {
        for (int i = 0; i < 4; i++) {
          sr.add(60 + i, WrOpcode.RDMA_WRITE, 0).sge(a.mr, 0, 8).rdma(b.address(), b.rkey());
        }
        p.a.postSend(sr);
      }
      List<Wc> got = Completions.await(p.aSendCq, 4, "A send CQ (signalAll)");
      assertEquals(List.of(60L, 61L, 62L, 63L), got.stream().map(Wc::wrId).toList(),
          "wr_ids " + got);
    }
  }

  /** Many sends complete in order on both sides, across the 24-bit PSN wrap. */
  @Test
  void rcDeliversManyRequestsInOrder() {
    int n = 200;
    try (RcPair p = RcPair.builder().maxSendWr(n).maxRecvWr(n).cqSize(2 * n)
        .a(Link.defaults().sqPsn(0xffffff - 50)).build(fx);
        Region a = Region.of(p.pd, 8 * n, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 16 * n, Link.ALL_REMOTE)) {
      try (RecvRequests rr = new RecvRequests(n, 1)) {
        for (int i = 0; i < n; i++) rr.add(1000 + i).sge(b.mr, 16L * i, 16);
        p.b.postRecv(rr);
      }
      for (int i = 0; i < n; i++) a.putLong(8 * i, 0xABCD0000L + i);
      try (SendRequests sr = new SendRequests(n, 1)) {
        for (int i = 0; i < n; i++) sr.add(i, WrOpcode.SEND, SIGNALED).sge(a.mr, 8L * i, 8);
        p.a.postSend(sr);
      }
      List<Wc> sent = Completions.await(p.aSendCq, n, "A send CQ");
      List<Wc> recv = Completions.await(p.bRecvCq, n, "B recv CQ");
      for (int i = 0; i < n; i++) {
        assertEquals(WcStatus.SUCCESS, sent.get(i).status(), sent.get(i).toString());
        assertEquals(i, sent.get(i).wrId(), "send completion " + i);
        assertEquals(WcStatus.SUCCESS, recv.get(i).status(), recv.get(i).toString());
        assertEquals(1000 + i, recv.get(i).wrId(), "receive completion " + i);
        assertEquals(8, recv.get(i).byteLen(), recv.get(i).toString());
        assertEquals(0xABCD0000L + i, b.getLong(16 * i), "message " + i);
      }
    }
  }

  /** A write posted before a send is visible when the send arrives (RC ordering). */
  @Test
  void writeIsVisibleWhenALaterSendArrives() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 65536, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 65536, Link.ALL_REMOTE)) {
      byte[] big = Region.pattern(60000, 16);
      a.put(0, big);
      a.put(60000, "done".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      postRecv(p.b, 70, b, 60000, 64);
      try (SendRequests sr = new SendRequests(2, 1)) {
        sr.add(71, WrOpcode.RDMA_WRITE, 0).sge(a.mr, 0, 60000).rdma(b.address(), b.rkey());
        sr.add(72, WrOpcode.SEND, SIGNALED).sge(a.mr, 60000, 4);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 70, WcOpcode.RECV);
      assertBytes(big, b.get(0, 60000), "bytes of the earlier write when the send arrived");
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 72, WcOpcode.SEND);
      ByteBuffer tag = b.buffer.view(60000, 4);
      assertEquals('d', tag.get(0), "send payload");
    }
  }

  /** UC carries sends and RDMA writes (no acknowledgements, no reads). */
  @Test
  void ucSendAndRdmaWrite() {
    requireFeature(Feature.UC);
    int access = dev.pekkordma.verbs.Access.LOCAL_WRITE | dev.pekkordma.verbs.Access.REMOTE_WRITE;
    try (RcPair p = RcPair.builder().type(dev.pekkordma.verbs.QpType.UC)
        .a(Link.defaults().access(access).sqPsn(0x300))
        .b(Link.defaults().access(access).sqPsn(0x400)).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      assertEquals(dev.pekkordma.verbs.QpType.UC, p.a.type(), "type");
      byte[] data = Region.pattern(500, 17);
      a.put(0, data);
      postRecv(p.b, 1, b, 0, 1024);
      sendImm(p.a, 2, SIGNALED, a, 0, 500, 99);
      Completions.awaitSuccess(p.aSendCq, "UC A send CQ", 2, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "UC B recv CQ", 1, WcOpcode.RECV);
      assertEquals(500, r.byteLen(), r.toString());
      assertEquals(99, r.imm(), r.toString());
      assertBytes(data, b.get(0, 500), "UC send");
      write(p.a, 3, SIGNALED, a, 0, 300, b.address(2048), b.rkey());
      Completions.awaitSuccess(p.aSendCq, "UC A send CQ", 3, WcOpcode.RDMA_WRITE);
      long deadline = System.nanoTime() + ConformanceProvider.TIMEOUT.toNanos();
      // UC completes the write locally: the bytes arrive shortly after
      while (!java.util.Arrays.equals(slice(data, 0, 300), b.get(2048, 300))
          && System.nanoTime() < deadline) {
        sleep(java.time.Duration.ofMillis(5));
      }
      assertBytes(slice(data, 0, 300), b.get(2048, 300), "UC RDMA write");

      postRecv(p.b, 4, b, 0, 64);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(5, WrOpcode.RDMA_WRITE_WITH_IMM, SIGNALED).sge(a.mr, 100, 200)
            .rdma(b.address(3000), b.rkey()).immediate(77);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "UC A send CQ", 5, WcOpcode.RDMA_WRITE);
      Wc w = Completions.awaitSuccess(p.bRecvCq, "UC B recv CQ", 4, WcOpcode.RECV_RDMA_WITH_IMM);
      assertEquals(77, w.imm(), w.toString());
      assertEquals(200, w.byteLen(), w.toString());
      assertBytes(slice(data, 100, 200), b.get(3000, 200), "UC RDMA write with immediate");
    }
  }
}
