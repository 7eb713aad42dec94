package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Shared receive queues. */
class SrqConformanceTest extends ConformanceTest {

  @BeforeEach
  void needsSrq() {
    requireFeature(Feature.SRQ);
  }

  @Test
  void attributesAndCounting() {
    int before = fx.provider.liveResources().srqs();
    try (ProtectionDomain pd = fx.context.allocPd()) {
      SharedReceiveQueue srq = pd.createSrq(new SrqAttributes(16, 2, 0));
      try {
        assertSame(pd, srq.pd(), "PD of the SRQ");
        SrqAttributes q = srq.query();
        assertTrue(q.maxWr() >= 16, "maxWr " + q.maxWr());
        assertTrue(q.maxSge() >= 2, "maxSge " + q.maxSge());
        assertEquals(0, q.limit(), "limit");
        assertEquals(before + 1, fx.provider.liveResources().srqs(), "SRQs after create");
      } finally {
        srq.close();
      }
    }
    assertEquals(before, fx.provider.liveResources().srqs(), "SRQs after close");
  }

  @Test
  void oneSrqFeedsTwoQps() {
    try (ProtectionDomain pd = fx.context.allocPd();
        Region a = Region.of(pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(pd, 4096, Link.ALL_REMOTE)) {
      SharedReceiveQueue srq = pd.createSrq(new SrqAttributes(16, 1, 0));
      CompletionQueue recv = fx.context.createCq(32, null);
      try (RcPair p1 = RcPair.builder().pd(pd).bSrq(srq).bCqs(null, recv).build(fx);
          RcPair p2 = RcPair.builder().pd(pd).bSrq(srq).bCqs(null, recv).build(fx)) {
        try (RecvRequests rr = new RecvRequests(4, 1)) {
          for (int i = 0; i < 4; i++) rr.add(500 + i).sge(b.mr, 512L * i, 512);
          srq.postRecv(rr);
        }
        byte[] one = "from pair one".getBytes(StandardCharsets.US_ASCII);
        byte[] two = "from the second pair".getBytes(StandardCharsets.US_ASCII);
        a.put(0, one).put(1024, two);
        send(p1.a, 1, SIGNALED, a, 0, one.length);
        Completions.awaitSuccess(p1.aSendCq, "pair 1 A send CQ", 1, WcOpcode.SEND);
        send(p2.a, 2, SIGNALED, a, 1024, two.length);
        Completions.awaitSuccess(p2.aSendCq, "pair 2 A send CQ", 2, WcOpcode.SEND);
        List<Wc> got = Completions.await(recv, 2, "shared recv CQ");
        Set<Long> used = new HashSet<>();
        for (Wc wc : got) {
          assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
          assertEquals(WcOpcode.RECV, wc.opcode(), wc.toString());
          assertTrue(wc.wrId() >= 500 && wc.wrId() < 504, "wr_id from the SRQ: " + wc);
          assertTrue(used.add(wc.wrId()), "each receive is used once: " + got);
          byte[] expected = wc.qpNum() == p1.b.qpNum() ? one
              : wc.qpNum() == p2.b.qpNum() ? two : null;
          assertTrue(expected != null, "qp_num of " + wc + " is neither " + p1.b.qpNum()
              + " nor " + p2.b.qpNum());
          assertEquals(expected.length, wc.byteLen(), wc.toString());
          assertBytes(expected, b.get((int) (wc.wrId() - 500) * 512, expected.length),
              "data of " + wc);
        }
        assertTrue(got.get(0).qpNum() != got.get(1).qpNum(), "both QPs received: " + got);
      } finally {
        recv.close();
        srq.close();
      }
    }
  }

  @Test
  void postRecvOnAQpWithAnSrqFails() {
    try (ProtectionDomain pd = fx.context.allocPd();
        Region b = Region.of(pd, 4096, Link.ALL_REMOTE)) {
      SharedReceiveQueue srq = pd.createSrq(new SrqAttributes(16, 1, 0));
      try (RcPair p = RcPair.builder().pd(pd).bSrq(srq).build(fx)) {
        RdmaException e = assertRdma(RdmaException.EINVAL, () -> postRecv(p.b, 1, b, 0, 64),
            "ibv_post_recv on a QP that uses an SRQ");
        assertMentions(e, "ibv_post_recv on a QP that uses an SRQ", String.valueOf(p.b.qpNum()));
      } finally {
        srq.close();
      }
    }
  }

  @Test
  void srqInUseWontCloseAndOverflowFails() {
    try (ProtectionDomain pd = fx.context.allocPd();
        Region b = Region.of(pd, 4096, Link.ALL_REMOTE)) {
      SharedReceiveQueue srq = pd.createSrq(new SrqAttributes(4, 1, 0));
      try {
        try (RcPair p = RcPair.builder().pd(pd).bSrq(srq).build(fx)) {
          RdmaException e = assertRdma(RdmaException.EBUSY, srq::close,
              "closing an SRQ a QP uses");
          assertMentionsAnyIgnoreCase(e, "closing an SRQ a QP uses", "QP", "queue pair");
        }
        int max = srq.query().maxWr();
        try (RecvRequests rr = new RecvRequests(max + 1, 1)) {
          for (int i = 0; i <= max; i++) rr.add(i).sge(b.mr, 0, 8);
          RdmaException e = assertRdma(RdmaException.ENOMEM, () -> srq.postRecv(rr),
              (max + 1) + " receives on an SRQ of " + max);
          assertMentions(e, "SRQ overflow", String.valueOf(max));
        }
      } finally {
        srq.close();
      }
    }
  }
}
