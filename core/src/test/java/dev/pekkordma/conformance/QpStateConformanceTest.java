package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.QpState.ERR;
import static dev.pekkordma.verbs.QpState.INIT;
import static dev.pekkordma.verbs.QpState.RESET;
import static dev.pekkordma.verbs.QpState.RTR;
import static dev.pekkordma.verbs.QpState.RTS;
import static dev.pekkordma.verbs.QpState.SQD;
import static dev.pekkordma.verbs.QpState.SQE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.IllegalQpTransitionException;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpCapabilities;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The QP state machine: every legal transition of RC (and UC, UD where supported) with the
 * attributes the IB specification requires, a table of illegal ones, and missing or extra
 * attributes. Each failure must be an IllegalQpTransitionException naming from and to, and must
 * leave the QP where it was.
 */
class QpStateConformanceTest extends ConformanceTest {
  private static final int QKEY = 0x11111111;
  private static final int UC_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;

  /** The IB specification's illegal transitions a user can attempt (SQE is never a target). */
  private static final QpState[][] ILLEGAL = {
      {RESET, RTR}, {RESET, RTS}, {RESET, SQD}, {RESET, SQE}, {RESET, ERR},
      {INIT, RTS}, {INIT, SQD}, {INIT, SQE},
      {RTR, INIT}, {RTR, RTR}, {RTR, SQD}, {RTR, SQE},
      {RTS, INIT}, {RTS, RTR}, {RTS, SQE},
      {SQD, INIT}, {SQD, RTR}, {SQD, SQE},
      {ERR, INIT}, {ERR, RTR}, {ERR, RTS}, {ERR, SQD}, {ERR, SQE},
  };

  private ProtectionDomain pd;
  private CompletionQueue cq;
  private final List<QueuePair> qps = new ArrayList<>();

  @BeforeEach
  void resources() {
    pd = fx.context.allocPd();
    cq = fx.context.createCq(64, null);
  }

  @AfterEach
  void release() {
    for (QueuePair qp : qps) qp.close();
    qps.clear();
    if (cq != null) cq.close();
    if (pd != null) pd.close();
  }

  private QueuePair newQp(QpType type) {
    QueuePair qp = pd.createQp(QpInitAttributes.of(type, cq, cq).maxSendWr(4).maxRecvWr(4));
    qps.add(qp);
    assertEquals(RESET, qp.state(), type + " QP " + qp.qpNum() + " after create");
    assertEquals(type, qp.type(), "type of the new QP");
    return qp;
  }

  /** Attributes for a legal {@code from -> to}: what is required plus some of what is optional. */
  private QpAttributes legal(QueuePair qp, QpState from, QpState to) {
    QpType t = qp.type();
    QpAttributes a = new QpAttributes().state(to);
    if (to == RESET || to == ERR) return a;
    switch (from) {
      case RESET:
        return t == QpType.UD ? QpAttributes.toInitUd(fx.port, QKEY)
            : QpAttributes.toInit(fx.port, t == QpType.UC ? UC_ACCESS : Link.ALL_REMOTE);
      case INIT:
        if (to == INIT) return t == QpType.UD ? a.qkey(QKEY) : a.accessFlags(Access.LOCAL_WRITE);
        if (t == QpType.UD) return a;
        a.addressVector(fx.loopback()).destQpNum(qp.qpNum()).rqPsn(77).pathMtu(fx.mtu());
        if (t == QpType.RC) {
          a.maxDestRdAtomic(Link.rdAtomic(fx.attributes.maxQpRdAtom())).minRnrTimer(1);
        }
        return a;
      case RTR:
        a.sqPsn(77);
        if (t == QpType.RC) {
          a.timeout(14).retryCount(7).rnrRetry(7)
              .maxRdAtomic(Link.rdAtomic(fx.attributes.maxQpInitRdAtom()));
        }
        return a;
      case RTS:
        if (to == SQD) return a.sqdAsyncNotify(true);
        return t == QpType.UD ? a.qkey(QKEY) : t == QpType.RC ? a.minRnrTimer(2)
            : a.accessFlags(UC_ACCESS);
      case SQD:
        if (to == SQD) {
          return t == QpType.UD ? a.qkey(QKEY) : t == QpType.RC ? a.timeout(15)
              : a.accessFlags(UC_ACCESS);
        }
        return a;
      default:
        throw new IllegalArgumentException(from + " -> " + to);
    }
  }

  private void move(QueuePair qp, QpState to) {
    QpState from = qp.state();
    try {
      qp.modify(legal(qp, from, to));
    } catch (RuntimeException e) {
      throw new AssertionError(qp.type() + " QP " + qp.qpNum() + ": the legal transition " + from
          + " -> " + to + " failed: " + e, e);
    }
    if (to == SQD) awaitDrained(qp);
    assertEquals(to, qp.state(), qp.type() + " QP " + qp.qpNum() + " after " + from + " -> " + to);
    assertEquals(to, qp.query().state(), qp.type() + " QP " + qp.qpNum() + ": query().state()"
        + " after " + from + " -> " + to);
  }

  /** SQD -> anything needs the send queue drained: wait for SQ_DRAINED (SQD tests check it). */
  private void awaitDrained(QueuePair qp) {
    try {
      awaitAsync(fx.context, "SQ_DRAINED", e -> e.type() == AsyncEventType.SQ_DRAINED
          && e.qp() != null && e.qp().qpNum() == qp.qpNum(), Duration.ofSeconds(1));
    } catch (AssertionError e) {
      System.out.println("[conformance] " + testName + ": no SQ_DRAINED for QP " + qp.qpNum()
          + " after RTS -> SQD; going on");
    }
  }

  /** A new QP of {@code type} brought to {@code state} by legal transitions. */
  private QueuePair qpIn(QpType type, QpState state) {
    QueuePair qp = newQp(type);
    QpState[] path;
    switch (state) {
      case RESET: path = new QpState[0]; break;
      case INIT: path = new QpState[] {INIT}; break;
      case RTR: path = new QpState[] {INIT, RTR}; break;
      case RTS: path = new QpState[] {INIT, RTR, RTS}; break;
      case SQD: path = new QpState[] {INIT, RTR, RTS, SQD}; break;
      case ERR: path = new QpState[] {INIT, ERR}; break;
      default: throw new IllegalArgumentException(state.toString());
    }
    for (QpState s : path) move(qp, s);
    return qp;
  }

  private void walk(QpType type, QpState... path) {
    QueuePair qp = newQp(type);
    StringBuilder done = new StringBuilder("RESET");
    for (QpState s : path) {
      move(qp, s);
      done.append(" -> ").append(s);
    }
    System.out.println("[conformance] " + type + " legal path: " + done);
  }

  @Test
  void rcEveryLegalTransition() {
    walk(QpType.RC, INIT, INIT, RTR, RTS, RTS, SQD, SQD, RTS, ERR, ERR, RESET, RESET, INIT, RTR,
        RTS);
    for (QpState s : new QpState[] {INIT, RTR, RTS, SQD, ERR}) {
      move(qpIn(QpType.RC, s), ERR);
    }
    for (QpState s : new QpState[] {RESET, INIT, RTR, RTS, SQD, ERR}) {
      move(qpIn(QpType.RC, s), RESET);
    }
  }

  @Test
  void ucEveryLegalTransition() {
    requireFeature(Feature.UC);
    walk(QpType.UC, INIT, INIT, RTR, RTS, RTS, SQD, SQD, RTS, ERR, RESET, INIT, RTR, RTS);
    for (QpState s : new QpState[] {INIT, RTR, RTS, SQD}) {
      move(qpIn(QpType.UC, s), ERR);
      move(qpIn(QpType.UC, s), RESET);
    }
  }

  @Test
  void udEveryLegalTransition() {
    requireFeature(Feature.UD);
    walk(QpType.UD, INIT, INIT, RTR, RTS, RTS, SQD, SQD, RTS, ERR, RESET, INIT, RTR, RTS);
    for (QpState s : new QpState[] {INIT, RTR, RTS, SQD}) {
      move(qpIn(QpType.UD, s), ERR);
      move(qpIn(QpType.UD, s), RESET);
    }
  }

  private void illegalTable(QpType type) {
    List<String> wrong = new ArrayList<>();
    for (QpState[] c : ILLEGAL) {
      QpState from = c[0];
      QpState to = c[1];
      QueuePair qp = qpIn(type, from);
      String what = type + " QP " + qp.qpNum() + " " + from + " -> " + to;
      try {
        // the attributes of the nearest legal transition into 'to', so only the edge is wrong
        QpAttributes attrs = to == SQE ? new QpAttributes().state(SQE) : attrsInto(qp, to);
        qp.modify(attrs);
        wrong.add(what + ": accepted (state now " + qp.state() + ")");
        continue;
      } catch (IllegalQpTransitionException e) {
        if (e.from() != from || e.to() != to) {
          wrong.add(what + ": exception says " + e.from() + " -> " + e.to());
        }
        String msg = String.valueOf(e.getMessage());
        if (!msg.contains(from.name()) || !msg.contains(to.name())
            || !msg.contains(String.valueOf(qp.qpNum()))) {
          wrong.add(what + ": message \"" + msg + "\" does not name the QP, from and to");
        }
        if (e.errno() != RdmaException.EINVAL) wrong.add(what + ": errno " + e.errno());
      } catch (RuntimeException e) {
        wrong.add(what + ": " + e + " instead of IllegalQpTransitionException");
      }
      if (qp.state() != from) wrong.add(what + ": the QP moved to " + qp.state());
    }
    if (!wrong.isEmpty()) fail(wrong.size() + " illegal transitions misbehaved:\n  "
        + String.join("\n  ", wrong));
  }

  /** Attributes as for a legal move into {@code to} from its usual predecessor. */
  private QpAttributes attrsInto(QueuePair qp, QpState to) {
    switch (to) {
      case INIT: return legal(qp, RESET, INIT);
      case RTR: return legal(qp, INIT, RTR);
      case RTS: return legal(qp, RTR, RTS);
      case SQD: return new QpAttributes().state(SQD);
      default: return new QpAttributes().state(to);
    }
  }

  @Test
  void rcIllegalTransitionsFailNamingFromAndTo() {
    illegalTable(QpType.RC);
  }

  @Test
  void ucIllegalTransitionsFailNamingFromAndTo() {
    requireFeature(Feature.UC);
    illegalTable(QpType.UC);
  }

  @Test
  void udIllegalTransitionsFailNamingFromAndTo() {
    requireFeature(Feature.UD);
    illegalTable(QpType.UD);
  }

  private void expectRefused(QueuePair qp, QpAttributes attrs, String what, String... names) {
    QpState from = qp.state();
    QpState to = attrs.state();
    IllegalQpTransitionException e = assertThrows(IllegalQpTransitionException.class,
        () -> qp.modify(attrs), what);
    assertEquals(from, e.from(), what + ": from() of " + e.getMessage());
    assertEquals(to, e.to(), what + ": to() of " + e.getMessage());
    assertMentions(e, what, from.name(), to.name());
    assertMentions(e, what, names);
    assertEquals(from, qp.state(), what + ": state after the refused modify");
  }

  @Test
  void missingRequiredAttributesAreNamed() {
    QueuePair rc = newQp(QpType.RC);
    expectRefused(rc, new QpAttributes().state(INIT).pkeyIndex(0).port(fx.port),
        "RC RESET -> INIT without ACCESS_FLAGS", "ACCESS_FLAGS");
    move(rc, INIT);
    expectRefused(rc, new QpAttributes().state(RTR).addressVector(fx.loopback())
        .destQpNum(rc.qpNum()).rqPsn(1).pathMtu(fx.mtu()),
        "RC INIT -> RTR without MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER", "MAX_DEST_RD_ATOMIC",
        "MIN_RNR_TIMER");
    expectRefused(rc, new QpAttributes().state(RTR).destQpNum(rc.qpNum()).rqPsn(1)
        .pathMtu(fx.mtu()).maxDestRdAtomic(1).minRnrTimer(1),
        "RC INIT -> RTR without AV", "AV");
    move(rc, RTR);
    expectRefused(rc, new QpAttributes().state(RTS).sqPsn(1).retryCount(7).rnrRetry(7)
        .maxRdAtomic(1), "RC RTR -> RTS without TIMEOUT", "TIMEOUT");
    expectRefused(rc, new QpAttributes().state(RTS).timeout(14).retryCount(7).rnrRetry(7)
        .maxRdAtomic(1), "RC RTR -> RTS without SQ_PSN", "SQ_PSN");
    move(rc, RTS);
    if (fx.provider.supports(Feature.UD)) {
      QueuePair ud = newQp(QpType.UD);
      expectRefused(ud, new QpAttributes().state(INIT).pkeyIndex(0).port(fx.port),
          "UD RESET -> INIT without QKEY", "QKEY");
      move(ud, INIT);
    }
  }

  @Test
  void attributesNotAllowedInATransitionAreNamed() {
    QueuePair rc = newQp(QpType.RC);
    expectRefused(rc, QpAttributes.toInit(fx.port, Link.ALL_REMOTE).destQpNum(5),
        "RC RESET -> INIT with DEST_QPN", "DEST_QPN");
    move(rc, INIT);
    move(rc, RTR);
    expectRefused(rc, legal(rc, RTR, RTS).addressVector(fx.loopback()),
        "RC RTR -> RTS with AV", "AV");
    move(rc, RTS);
  }

  @Test
  void queryReturnsWhatWasSet() {
    try (RcPair p = RcPair.builder()
        .a(Link.defaults().sqPsn(0x123456).timeout(12).retryCount(5).rnrRetry(3).minRnrTimer(4))
        .b(Link.defaults().sqPsn(0x654321)).maxSendWr(8).maxRecvWr(8).build(fx)) {
      QpAttributes q = p.a.query();
      assertEquals(RTS, q.state(), "state");
      assertEquals(p.b.qpNum(), q.destQpNum(), "dest QP number");
      assertEquals(0x123456, q.sqPsn(), "sq_psn");
      assertEquals(0x654321, q.rqPsn(), "rq_psn");
      assertEquals(fx.mtu(), q.pathMtu(), "path MTU");
      assertEquals(12, q.timeout(), "timeout");
      assertEquals(5, q.retryCount(), "retry count");
      assertEquals(3, q.rnrRetry(), "rnr retry");
      assertEquals(4, q.minRnrTimer(), "min RNR timer");
      assertEquals(Link.ALL_REMOTE, q.accessFlags(), "access flags");
      assertEquals(fx.port, q.port(), "port");
      QpCapabilities cap = p.a.capabilities();
      assertTrue(cap.maxSendWr() >= 8 && cap.maxRecvWr() >= 8, "capabilities " + cap);
      assertTrue(cap.maxSendSge() >= 1 && cap.maxRecvSge() >= 1, "capabilities " + cap);
      assertTrue(p.a.qpNum() != p.b.qpNum(), "QP numbers " + p.a.qpNum() + " and " + p.b.qpNum());
      assertTrue((p.a.qpNum() & ~0xffffff) == 0, "QP number " + p.a.qpNum() + " is 24 bits");
    }
  }

  @Test
  void resetQpCanBeConnectedAgain() {
    try (RcPair p = RcPair.open(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      p.a.modify(new QpAttributes().state(ERR));
      p.b.modify(new QpAttributes().state(ERR));
      p.a.modify(new QpAttributes().state(RESET));
      p.b.modify(new QpAttributes().state(RESET));
      Link.defaults().sqPsn(500).bringUp(p.a, fx.attributes, fx.port, fx.loopback(),
          p.b.qpNum(), 900, fx.mtu());
      Link.defaults().sqPsn(900).bringUp(p.b, fx.attributes, fx.port, fx.loopback(),
          p.a.qpNum(), 500, fx.mtu());
      byte[] data = Region.pattern(100, 8);
      a.put(0, data);
      postRecv(p.b, 7, b, 0, 256);
      send(p.a, 8, dev.pekkordma.verbs.SendRequests.SIGNALED, a, 0, 100);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 8, dev.pekkordma.verbs.WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 7,
          dev.pekkordma.verbs.WcOpcode.RECV);
      assertEquals(100, r.byteLen(), r.toString());
      assertBytes(data, b.get(0, 100), "data after reconnecting reset QPs");
    }
  }
}
