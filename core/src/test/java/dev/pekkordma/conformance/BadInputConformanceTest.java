package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpCapabilities;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Bad arguments, exhausted queues, wrong states, closed objects: refused, with a reason. */
class BadInputConformanceTest extends ConformanceTest {

  @Test
  void createCqRejectsBadSizes() {
    DeviceAttributes d = fx.attributes;
    assertRejected(() -> fx.context.createCq(0, null).close(), "createCq(0)");
    assertRejected(() -> fx.context.createCq(-1, null).close(), "createCq(-1)");
    assertRdma(RdmaException.EINVAL, () -> fx.context.createCq(d.maxCqe() + 1, null).close(),
        "createCq(maxCqe + 1)", String.valueOf(d.maxCqe()));
  }

  @Test
  void createQpRejectsSizesBeyondTheDevice() {
    DeviceAttributes d = fx.attributes;
    try (ProtectionDomain pd = fx.context.allocPd()) {
      CompletionQueue cq = fx.context.createCq(8, null);
      try {
        assertRdma(RdmaException.EINVAL,
            () -> pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(d.maxQpWr() + 1))
                .close(), "maxSendWr = maxQpWr + 1", "maxSendWr", String.valueOf(d.maxQpWr()));
        assertRdma(RdmaException.EINVAL,
            () -> pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxRecvWr(d.maxQpWr() + 1))
                .close(), "maxRecvWr = maxQpWr + 1", "maxRecvWr", String.valueOf(d.maxQpWr()));
        assertRdma(RdmaException.EINVAL,
            () -> pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendSge(d.maxSge() + 1))
                .close(), "maxSendSge = maxSge + 1", "maxSendSge", String.valueOf(d.maxSge()));
        assertRdma(RdmaException.EINVAL,
            () -> pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq)
                .maxInlineData(d.maxInlineData() + 1)).close(), "maxInlineData beyond the device",
            "maxInlineData", String.valueOf(d.maxInlineData()));
        assertRdma(RdmaException.EINVAL,
            () -> pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(-1)).close(),
            "maxSendWr = -1", "maxSendWr");
        assertRdma(RdmaException.EINVAL,
            () -> pd.createQp(QpInitAttributes.of(QpType.RC, null, cq)).close(),
            "createQp without a send CQ", "sendCq");
      } finally {
        cq.close();
      }
    }
  }

  @Test
  void nullArgumentsAreRejected() {
    try (RcPair p = RcPair.open(fx)) {
      assertRejected(() -> p.a.postSend(null), "postSend(null)");
      assertRejected(() -> p.a.postRecv(null), "postRecv(null)");
      assertRejected(() -> p.a.modify(null), "modify(null)");
      assertRejected(() -> p.aSendCq.poll(null), "poll(null)");
      assertRejected(() -> p.pd.createQp(null), "createQp(null)");
      assertRejected(() -> p.pd.registerMemory(null, Access.LOCAL_WRITE), "registerMemory(null)");
      assertRejected(() -> p.pd.allocMemoryWindow(null), "allocMemoryWindow(null)");
      assertRejected(() -> p.pd.createAddressHandle(null), "createAddressHandle(null)");
      assertRejected(() -> fx.provider.open((dev.pekkordma.verbs.RdmaDevice) null),
          "open(null)");
      assertEquals(QpState.RTS, p.a.state(), "A after the refused calls");
    }
  }

  @Test
  void moreOutstandingSendsThanMaxSendWrIsEnomem() {
    requireFeature(Feature.WORK_QUEUE_LIMITS);
    // B stays in INIT: nothing A sends is answered, so every request stays outstanding
    try (RcPair p = RcPair.builder().maxSendWr(4).a(Link.defaults().sqPsn(1).timeout(18))
        .b(Link.defaults().target(QpState.INIT)).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      int max = p.a.capabilities().maxSendWr();
      try (SendRequests sr = new SendRequests(max + 1, 1)) {
        for (int i = 0; i <= max; i++) {
          sr.add(i, WrOpcode.RDMA_WRITE, SIGNALED).sge(a.mr, 0, 8).rdma(b.address(), b.rkey());
        }
        RdmaException e = assertRdma(RdmaException.ENOMEM, () -> p.a.postSend(sr),
            (max + 1) + " sends on a send queue of " + max, String.valueOf(p.a.qpNum()),
            String.valueOf(max));
        System.out.println("[conformance] " + testName + ": " + e.getMessage());
      }
      p.a.modify(new QpAttributes().state(QpState.ERR));
      List<Wc> flushed = Completions.await(p.aSendCq, max, "A send CQ (the " + max
          + " that were posted)");
      for (int i = 0; i < max; i++) {
        assertEquals(i, flushed.get(i).wrId(), "flushed " + flushed);
        assertEquals(WcStatus.WR_FLUSH_ERR, flushed.get(i).status(), "flushed " + flushed);
      }
      Completions.expectNone(p.aSendCq, "A send CQ (the refused request must not run)");
    }
  }

  @Test
  void moreOutstandingReceivesThanMaxRecvWrIsEnomem() {
    requireFeature(Feature.WORK_QUEUE_LIMITS);
    try (RcPair p = RcPair.builder().maxRecvWr(4).build(fx);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      int max = p.b.capabilities().maxRecvWr();
      try (RecvRequests rr = new RecvRequests(max + 1, 1)) {
        for (int i = 0; i <= max; i++) rr.add(i).sge(b.mr, 0, 8);
        assertRdma(RdmaException.ENOMEM, () -> p.b.postRecv(rr),
            (max + 1) + " receives on a receive queue of " + max, String.valueOf(p.b.qpNum()),
            String.valueOf(max));
      }
    }
  }

  @Test
  void moreSgesThanMaxSgeIsRefused() {
    try (RcPair p = RcPair.builder().maxSge(2).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      QpCapabilities cap = p.a.capabilities();
      int sendSges = cap.maxSendSge() + 1;
      try (SendRequests sr = new SendRequests(1, sendSges)) {
        sr.add(1, WrOpcode.SEND, SIGNALED);
        for (int i = 0; i < sendSges; i++) sr.sge(a.mr, 8L * i, 8);
        assertRdma(RdmaException.EINVAL, () -> p.a.postSend(sr),
            sendSges + " SGEs on a QP with maxSendSge " + cap.maxSendSge(),
            String.valueOf(cap.maxSendSge()), String.valueOf(p.a.qpNum()));
      }
      int recvSges = p.b.capabilities().maxRecvSge() + 1;
      try (RecvRequests rr = new RecvRequests(1, recvSges)) {
        rr.add(2);
        for (int i = 0; i < recvSges; i++) rr.sge(a.mr, 8L * i, 8);
        assertRdma(RdmaException.EINVAL, () -> p.b.postRecv(rr),
            recvSges + " SGEs on a QP with maxRecvSge " + (recvSges - 1),
            String.valueOf(recvSges - 1), String.valueOf(p.b.qpNum()));
      }
      Completions.expectNone(p.aSendCq, "A send CQ");
    }
  }

  @Test
  void postingInResetOrInitIsRefused() {
    try (ProtectionDomain pd = fx.context.allocPd();
        Region r = Region.of(pd, 4096, Link.ALL_REMOTE)) {
      CompletionQueue cq = fx.context.createCq(8, null);
      QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
      try {
        assertRdma(RdmaException.EINVAL, () -> send(qp, 1, SIGNALED, r, 0, 8),
            "postSend in RESET", "RESET", String.valueOf(qp.qpNum()));
        assertRdma(RdmaException.EINVAL, () -> postRecv(qp, 2, r, 0, 8),
            "postRecv in RESET", "RESET", String.valueOf(qp.qpNum()));
        qp.modify(QpAttributes.toInit(fx.port, Link.ALL_REMOTE));
        assertRdma(RdmaException.EINVAL, () -> send(qp, 3, SIGNALED, r, 0, 8),
            "postSend in INIT", "INIT", String.valueOf(qp.qpNum()));
        postRecv(qp, 4, r, 0, 8); // receives may be posted from INIT on
        Completions.expectNone(cq, "CQ");
      } finally {
        qp.close();
        cq.close();
      }
    }
  }

  @Test
  void usingAClosedQpOrCqFails() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      int qpn = p.a.qpNum();
      p.closeA();
      RuntimeException e = assertThrows(RuntimeException.class,
          () -> send(p.a, 1, SIGNALED, a, 0, 8), "postSend on a destroyed QP");
      assertMentions(e, "postSend on a destroyed QP", String.valueOf(qpn));
      assertThrows(RuntimeException.class,
          () -> p.a.modify(new QpAttributes().state(QpState.ERR)), "modify of a destroyed QP");
    }
    CompletionQueue cq = fx.context.createCq(8, null);
    cq.close();
    try (WorkCompletions wcs = new WorkCompletions(4)) {
      RuntimeException e = assertThrows(RuntimeException.class, () -> cq.poll(wcs),
          "poll of a destroyed CQ");
      assertMentionsAnyIgnoreCase(e, "poll of a destroyed CQ", "CQ", "completion queue");
      assertThrows(RuntimeException.class, () -> cq.requestNotify(false),
          "requestNotify on a destroyed CQ");
    }
  }

  @Test
  void keysOfADeregisteredMrAreInvalid() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region gone = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      gone.fill(0x11);
      long addr = gone.address();
      int rkey = gone.rkey();
      gone.closeMr();
      write(p.a, 1, SIGNALED, a, 0, 8, addr, rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (rkey of a deregistered MR)", 1,
          WcStatus.REM_ACCESS_ERR);
      assertBytes(Region.filled(4096, 0x11), gone.all(), "memory of the deregistered MR");
    }
    requireFeature(Feature.LOCAL_ERROR_STATUSES); // the lkey half
    try (RcPair p = RcPair.open(fx);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region gone = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      long addr = gone.address();
      int lkey = gone.lkey();
      gone.closeMr();
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(2, WrOpcode.RDMA_WRITE, SIGNALED).sge(addr, 8, lkey).rdma(b.address(), b.rkey());
        p.a.postSend(sr);
      }
      Completions.awaitStatus(p.aSendCq, "A send CQ (lkey of a deregistered MR)", 2,
          WcStatus.LOC_PROT_ERR);
    }
  }

  /** Traffic and errors on one QP change nothing of another QP's memory. */
  @Test
  void nothingOfAnotherQpsMemoryChanges() {
    ProtectionDomain otherPd = fx.context.allocPd();
    try (RcPair p1 = RcPair.open(fx);
        RcPair p2 = RcPair.builder().pd(otherPd).build(fx);
        Region a1 = Region.of(p1.pd, 4096, Link.ALL_REMOTE);
        Region b1 = Region.of(p1.pd, 4096, Link.ALL_REMOTE);
        Region b2 = Region.of(otherPd, 4096, Link.ALL_REMOTE)) {
      b2.fill(0x77);
      postRecv(p2.b, 90, b2, 0, 4096);
      a1.put(0, Region.pattern(4096, 30));
      postRecv(p1.b, 91, b1, 0, 4096);
      send(p1.a, 1, SIGNALED, a1, 0, 1000);
      write(p1.a, 2, SIGNALED, a1, 0, 4096, b1.address(), b1.rkey());
      read(p1.a, 3, SIGNALED, a1, 0, 100, b1.address(), b1.rkey());
      List<Wc> ok = Completions.await(p1.aSendCq, 3, "pair 1 A send CQ");
      for (Wc wc : ok) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
      Completions.awaitSuccess(p1.bRecvCq, "pair 1 B recv CQ", 91, WcOpcode.RECV);
      // b2's rkey belongs to another PD: pair 1 may not use it
      write(p1.a, 4, SIGNALED, a1, 0, 64, b2.address(), b2.rkey());
      Completions.awaitStatus(p1.aSendCq, "pair 1 A send CQ (rkey of another PD)", 4,
          WcStatus.REM_ACCESS_ERR);
      assertBytes(Region.filled(4096, 0x77), b2.all(), "memory of the other pair");
      Completions.expectNone(p2.bRecvCq, "pair 2 B recv CQ");
      Completions.expectNone(p2.aSendCq, "pair 2 A send CQ");
      assertEquals(QpState.RTS, p2.a.state(), "pair 2 A state");
      assertEquals(QpState.RTS, p2.b.state(), "pair 2 B state");
    } finally {
      otherPd.close();
    }
  }

  @Test
  void inlineDataBeyondTheQpsLimitIsRefused() {
    int inline = Math.min(64, fx.attributes.maxInlineData());
    skipUnless(inline >= 1, "device maxInlineData " + fx.attributes.maxInlineData());
    try (RcPair p = RcPair.builder().maxInline(inline).build(fx);
        Region a = Region.of(p.pd, 8192, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 8192, Link.ALL_REMOTE)) {
      int max = p.a.capabilities().maxInlineData();
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(1, WrOpcode.RDMA_WRITE, SIGNALED | SendRequests.INLINE).sge(a.mr, 0, max + 1)
            .rdma(b.address(), b.rkey());
        assertRdma(RdmaException.EINVAL, () -> p.a.postSend(sr),
            (max + 1) + " bytes inline on a QP with maxInlineData " + max, String.valueOf(max),
            String.valueOf(p.a.qpNum()));
      }
      Completions.expectNone(p.aSendCq, "A send CQ");
    }
  }

  @Test
  void rdmaReadOnUcIsRefused() {
    requireFeature(dev.pekkordma.verbs.RdmaProvider.Feature.UC);
    int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
    try (RcPair p = RcPair.builder().type(QpType.UC).a(Link.defaults().access(access))
        .b(Link.defaults().access(access)).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      // the one table both providers check: RDMA READ and atomics
      for (WrOpcode op : java.util.Arrays.stream(WrOpcode.values())
          .filter(op -> !QpType.UC.allows(op)).toList()) {
        try (SendRequests sr = new SendRequests(1, 1)) {
          sr.add(1, op, SIGNALED).sge(a.mr, 0, 8).rdma(a.address(64), a.rkey());
          assertRdma(RdmaException.EINVAL, () -> p.a.postSend(sr), op + " on a UC QP",
              op.name());
        }
      }
      Completions.expectNone(p.aSendCq, "A send CQ");
    }
  }
}
