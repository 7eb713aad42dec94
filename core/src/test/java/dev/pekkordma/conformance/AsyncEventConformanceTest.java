package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Asynchronous events, provoked through the verbs or, where the provider has it, faults(). */
class AsyncEventConformanceTest extends ConformanceTest {

  @Test
  void commEstWhenAQpInRtrReceives() {
    requireFeature(Feature.COMM_EST_EVENT);
    try (RcPair p = RcPair.builder().b(Link.defaults().sqPsn(0x2000).target(QpState.RTR))
        .build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      assertEquals(QpState.RTR, p.b.state(), "B before the first packet");
      postRecv(p.b, 1, b, 0, 64);
      send(p.a, 2, SIGNALED, a, 0, 32);
      Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 1, WcOpcode.RECV);
      AsyncEvent e = awaitQpEvent(fx.context, AsyncEventType.COMM_EST, p.b);
      assertSame(null, e.cq(), "cq of " + e);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 2, WcOpcode.SEND);
      p.b.modify(new QpAttributes().state(QpState.RTS).sqPsn(0x2000).timeout(14).retryCount(7)
          .rnrRetry(7).maxRdAtomic(1));
      assertEquals(QpState.RTS, p.b.state(), "B after RTR -> RTS");
    }
  }

  /**
   * RTS -> SQD with sqdAsyncNotify: SQ_DRAINED once what was in progress is done. A request
   * posted while in SQD does not start; after SQD -> RTS everything completes in order (a request
   * posted just before the modify may be held too: SQD only finishes what had started).
   */
  @Test
  void sqDrainedAfterRtsToSqdWithNotify() {
    requireFeature(Feature.SQD_RESUMES_POSTED_WORK);
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      a.put(0, Region.pattern(64, 1)).put(1024, Region.pattern(64, 2));
      b.fill(0x5a);
      write(p.a, 1, SIGNALED, a, 0, 64, b.address(), b.rkey());
      p.a.modify(new QpAttributes().state(QpState.SQD).sqdAsyncNotify(true));
      awaitQpEvent(fx.context, AsyncEventType.SQ_DRAINED, p.a);
      assertEquals(QpState.SQD, p.a.state(), "A after SQ_DRAINED");
      write(p.a, 2, SIGNALED, a, 1024, 64, b.address(1024), b.rkey());
      sleep(ConformanceProvider.QUIET);
      assertBytes(Region.filled(64, 0x5a), b.get(1024, 64),
          "target of a write posted in SQD, before SQD -> RTS");
      p.a.modify(new QpAttributes().state(QpState.RTS));
      List<Wc> done = Completions.await(p.aSendCq, 2, "A send CQ after SQD -> RTS");
      for (int i = 0; i < 2; i++) {
        assertEquals(WcStatus.SUCCESS, done.get(i).status(), done.toString());
        assertEquals(i + 1, done.get(i).wrId(), "completion order " + done);
      }
      assertBytes(Region.pattern(64, 1), b.get(0, 64), "first write");
      assertBytes(Region.pattern(64, 2), b.get(1024, 64), "write posted in SQD");
    }
  }

  @Test
  void noSqDrainedWithoutNotify() {
    requireFeature(Feature.SQ_DRAINED_ONLY_ON_REQUEST);
    try (RcPair p = RcPair.open(fx)) {
      p.a.modify(new QpAttributes().state(QpState.SQD));
      expectNoAsync(fx.context, "SQ_DRAINED without sqdAsyncNotify",
          e -> e.type() == AsyncEventType.SQ_DRAINED, ConformanceProvider.QUIET);
    }
  }

  @Test
  void lastWqeReachedWhenAnSrqQpGoesToErr() {
    requireFeature(Feature.LAST_WQE_REACHED_EVENT);
    requireFeature(Feature.SRQ);
    try (ProtectionDomain pd = fx.context.allocPd();
        Region b = Region.of(pd, 4096, Link.ALL_REMOTE)) {
      SharedReceiveQueue srq = pd.createSrq(new SrqAttributes(16, 1, 0));
      try {
        try (RcPair p = RcPair.builder().pd(pd).bSrq(srq).build(fx)) {
          try (RecvRequests rr = new RecvRequests(2, 1)) {
            rr.add(1).sge(b.mr, 0, 64).add(2).sge(b.mr, 64, 64);
            srq.postRecv(rr);
          }
          p.b.modify(new QpAttributes().state(QpState.ERR));
          AsyncEvent e = awaitQpEvent(fx.context, AsyncEventType.QP_LAST_WQE_REACHED, p.b);
          assertEquals(p.b.qpNum(), e.qp().qpNum(), "QP of " + e);
          Completions.expectNone(p.bRecvCq,
              "B recv CQ (receives of a shared queue are not flushed with one of its QPs)");
        }
      } finally {
        srq.close();
      }
    }
  }

  @Test
  void srqLimitReachedOnceWhenFewerThanTheLimitRemain() {
    requireFeature(Feature.SRQ);
    try (ProtectionDomain pd = fx.context.allocPd();
        Region a = Region.of(pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(pd, 4096, Link.ALL_REMOTE)) {
      SharedReceiveQueue srq = pd.createSrq(new SrqAttributes(16, 1, 0));
      try (RcPair p = RcPair.builder().pd(pd).bSrq(srq).build(fx)) {
        try (RecvRequests rr = new RecvRequests(4, 1)) {
          for (int i = 0; i < 4; i++) rr.add(10 + i).sge(b.mr, 256L * i, 256);
          srq.postRecv(rr);
        }
        srq.armLimit(3);
        assertEquals(3, srq.query().limit(), "limit after armLimit(3)");
        send(p.a, 1, SIGNALED, a, 0, 8);
        Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 10, WcOpcode.RECV);
        expectNoAsync(fx.context, "SRQ_LIMIT_REACHED with 3 receives left (limit 3)",
            e -> e.type() == AsyncEventType.SRQ_LIMIT_REACHED, ConformanceProvider.QUIET);
        send(p.a, 2, SIGNALED, a, 0, 8);
        Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 11, WcOpcode.RECV);
        AsyncEvent e = awaitAsync(fx.context, "SRQ_LIMIT_REACHED with 2 receives left",
            ev -> ev.type() == AsyncEventType.SRQ_LIMIT_REACHED, ConformanceProvider.TIMEOUT);
        assertSame(srq, e.srq(), "SRQ of " + e);
        assertEquals(0, srq.query().limit(), "limit after it fired (disarmed)");
        send(p.a, 3, SIGNALED, a, 0, 8);
        Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 12, WcOpcode.RECV);
        expectNoAsync(fx.context, "a second SRQ_LIMIT_REACHED without re-arming",
            ev -> ev.type() == AsyncEventType.SRQ_LIMIT_REACHED, ConformanceProvider.QUIET);
        Completions.await(p.aSendCq, 3, "A send CQ");
      } finally {
        srq.close();
      }
    }
  }

  @Test
  void qpAccessErrOnTheResponderOfARemoteAccessViolation() {
    requireFeature(Feature.QP_ACCESS_ERR_EVENT);
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      write(p.a, 1, SIGNALED, a, 0, 64, b.address(), b.rkey() ^ 0x00ffff00);
      Completions.awaitStatus(p.aSendCq, "A send CQ", 1, WcStatus.REM_ACCESS_ERR);
      awaitQpEvent(fx.context, AsyncEventType.QP_ACCESS_ERR, p.b);
    }
  }

  @Test
  void portErrAndPortActiveFromFaults() {
    FaultInjection faults = requireFaults();
    try {
      faults.setPortState(fx.context, fx.port, false);
      AsyncEvent down = awaitAsync(fx.context, "PORT_ERR on port " + fx.port,
          e -> e.type() == AsyncEventType.PORT_ERR, ConformanceProvider.TIMEOUT);
      assertEquals(fx.port, down.port(), "port of " + down);
      assertNotEquals(PortState.ACTIVE, fx.context.queryPort(fx.port).state(),
          "port state after PORT_ERR");
    } finally {
      faults.setPortState(fx.context, fx.port, true);
    }
    AsyncEvent up = awaitAsync(fx.context, "PORT_ACTIVE on port " + fx.port,
        e -> e.type() == AsyncEventType.PORT_ACTIVE, ConformanceProvider.TIMEOUT);
    assertEquals(fx.port, up.port(), "port of " + up);
    assertEquals(PortState.ACTIVE, fx.context.queryPort(fx.port).state(),
        "port state after PORT_ACTIVE");
  }

  @Test
  void qpFatalFromFaultsMovesTheQpToErrAndFlushes() {
    FaultInjection faults = requireFaults();
    try (RcPair p = RcPair.open(fx);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      postRecv(p.b, 1, b, 0, 64);
      postRecv(p.b, 2, b, 64, 64);
      faults.qpFatal(p.b);
      awaitQpEvent(fx.context, AsyncEventType.QP_FATAL, p.b);
      assertEquals(QpState.ERR, p.b.state(), "state after QP_FATAL");
      List<Wc> flushed = Completions.await(p.bRecvCq, 2, "B recv CQ after QP_FATAL");
      for (Wc wc : flushed) assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(), wc.toString());
      assertEquals(QpState.RTS, p.a.state(), "the peer is not affected");
    }
  }

  /**
   * DEVICE_FATAL kills a device, so this uses a provider of its own (for the software provider,
   * a device of its own name) and leaves the shared one alone.
   */
  @Test
  void deviceFatalFromFaults() {
    requireFaults();
    RdmaProvider own = ConformanceProvider.loadProvider(ConfigFactory.parseString(
        "pekko-rdma.soft.devices = [\"conformance-fatal0\"]"));
    try {
      FaultInjection faults = FaultInjection.of(own).orElseThrow();
      DeviceContext ctx = own.open(own.devices().get(0));
      try {
        ProtectionDomain pd = ctx.allocPd();
        CompletionQueue cq = ctx.createCq(8, null);
        QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
        try {
          ConformanceProvider.Endpoint ep = ConformanceProvider.Endpoint.find(ctx);
          qp.modify(QpAttributes.toInit(ep.port(), Link.ALL_REMOTE));
          faults.deviceFatal(ctx);
          awaitAsync(ctx, "DEVICE_FATAL", e -> e.type() == AsyncEventType.DEVICE_FATAL,
              ConformanceProvider.TIMEOUT);
          assertEquals(QpState.ERR, qp.state(), "QP state after DEVICE_FATAL");
          RdmaException dead = assertThrows(RdmaException.class, ctx::allocPd);
          assertTrue(dead.getMessage().contains("fatal"), dead.getMessage());
        } finally {
          qp.close();
          cq.close();
          pd.close();
        }
        faults.restoreDevice(ctx);
        assertThrows(RdmaException.class, ctx::allocPd, "a context from before stays dead");
        try (DeviceContext fresh = own.open(own.devices().get(0))) {
          fresh.allocPd().close(); // a context opened after the device came back works
          assertEquals(PortState.ACTIVE, fresh.queryPort(1).state(), "port after the restore");
        }
      } finally {
        ctx.close();
      }
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), own.liveResources(),
          "resources of the fatal device's provider after closing everything");
    } finally {
      own.close();
    }
  }
}
