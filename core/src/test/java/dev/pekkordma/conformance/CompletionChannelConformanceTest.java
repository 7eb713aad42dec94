package dev.pekkordma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import org.junit.jupiter.api.Test;

/** Completion channels: one event per requestNotify, none without; solicited-only. */
class CompletionChannelConformanceTest extends ConformanceTest {
  private static final java.time.Duration QUIET = ConformanceProvider.QUIET;
  private static final java.time.Duration TIMEOUT = ConformanceProvider.TIMEOUT;

  private static void signaledWrite(RcPair p, long wrId, Region local, Region remote) {
    write(p.a, wrId, SendRequests.SIGNALED, local, 0, 16, remote.address(), remote.rkey());
  }

  @Test
  void exactlyOneEventPerRequestNotifyAndNoneWithout() {
    CompletionChannel ch = fx.context.createCompletionChannel();
    CompletionQueue cq = fx.context.createCq(16, ch);
    try {
      assertSame(ch, cq.channel(), "channel of the CQ");
      try (RcPair p = RcPair.builder().aCqs(cq, null).build(fx);
          Region local = Region.of(p.pd, 4096, Link.ALL_REMOTE);
          Region remote = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
        signaledWrite(p, 1, local, remote);
        Completions.awaitSuccess(cq, "CQ", 1, WcOpcode.RDMA_WRITE);
        assertNull(ch.awaitEvent(QUIET), "event without requestNotify");

        cq.requestNotify(false);
        signaledWrite(p, 2, local, remote);
        signaledWrite(p, 3, local, remote);
        assertSame(cq, ch.awaitEvent(TIMEOUT), "event after requestNotify + 2 completions");
        ch.ackEvents(cq, 1);
        Completions.await(cq, 2, "CQ");
        assertNull(ch.awaitEvent(QUIET), "a second event for one requestNotify");

        signaledWrite(p, 4, local, remote);
        Completions.awaitSuccess(cq, "CQ", 4, WcOpcode.RDMA_WRITE);
        assertNull(ch.awaitEvent(QUIET), "event after the notification was used up");

        cq.requestNotify(false);
        signaledWrite(p, 5, local, remote);
        assertSame(cq, ch.awaitEvent(TIMEOUT), "event after requestNotify again");
        ch.ackEvents(cq, 1);
        Completions.awaitSuccess(cq, "CQ", 5, WcOpcode.RDMA_WRITE);
      }
    } finally {
      cq.close();
      ch.close();
    }
  }

  @Test
  void solicitedOnlyWakesOnSolicitedReceivesAndErrors() {
    CompletionChannel ch = fx.context.createCompletionChannel();
    CompletionQueue recv = fx.context.createCq(16, ch);
    try {
      try (RcPair p = RcPair.builder().bCqs(null, recv).build(fx);
          Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
          Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
        for (int i = 0; i < 3; i++) postRecv(p.b, 10 + i, b, 256 * i, 256);
        recv.requestNotify(true);

        send(p.a, 1, SendRequests.SIGNALED, a, 0, 32);
        Completions.awaitSuccess(p.aSendCq, "A send CQ", 1, WcOpcode.SEND);
        Completions.awaitSuccess(recv, "B recv CQ", 10, WcOpcode.RECV);
        assertNull(ch.awaitEvent(QUIET), "event for an unsolicited receive (solicited-only)");

        send(p.a, 2, SendRequests.SIGNALED | SendRequests.SOLICITED, a, 0, 32);
        assertSame(recv, ch.awaitEvent(TIMEOUT), "event for a solicited receive");
        ch.ackEvents(recv, 1);
        Completions.awaitSuccess(recv, "B recv CQ", 11, WcOpcode.RECV);

        recv.requestNotify(true);
        p.b.modify(new QpAttributes().state(QpState.ERR)); // flushes receive 12
        assertSame(recv, ch.awaitEvent(TIMEOUT), "event for an error completion (solicited-only)");
        ch.ackEvents(recv, 1);
        Completions.awaitStatus(recv, "B recv CQ", 12, WcStatus.WR_FLUSH_ERR);
      }
    } finally {
      recv.close();
      ch.close();
    }
  }

  @Test
  void channelAndCqWontCloseWhileInUse() {
    CompletionChannel ch = fx.context.createCompletionChannel();
    CompletionQueue cq = fx.context.createCq(16, ch);
    boolean cqClosed = false;
    try {
      RdmaException e = assertRdma(RdmaException.EBUSY, ch::close,
          "closing a completion channel a CQ uses");
      assertMentionsAnyIgnoreCase(e, "closing a busy channel", "CQ", "completion queue");
      try (RcPair p = RcPair.builder().aCqs(cq, null).build(fx);
          Region local = Region.of(p.pd, 4096, Link.ALL_REMOTE);
          Region remote = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
        cq.requestNotify(false);
        signaledWrite(p, 1, local, remote);
        assertSame(cq, ch.awaitEvent(TIMEOUT), "event");
        Completions.awaitOne(cq, "CQ");
      }
      RdmaException u = assertRdma(RdmaException.EBUSY, cq::close,
          "closing a CQ with an unacknowledged event");
      assertMentionsAnyIgnoreCase(u, "closing a CQ with an unacknowledged event", "event",
          "ack");
      ch.ackEvents(cq, 1);
      cq.close();
      cqClosed = true;
    } finally {
      if (!cqClosed) {
        try {
          ch.ackEvents(cq, 1);
        } catch (RuntimeException ignored) {
          // already acknowledged
        }
        cq.close();
      }
      ch.close();
    }
    assertEquals(true, cqClosed);
  }
}
