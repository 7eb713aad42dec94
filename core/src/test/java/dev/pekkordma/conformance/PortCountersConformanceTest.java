package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.PortCounters.NOT_COUNTED;
import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.PortCounters;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.Test;

/**
 * A port's counters grow with what the port did. They are the port's, not the test's: on a
 * NIC other traffic adds to them, so every check is "grew", never an exact value, and a counter
 * the device does not keep (NOT_COUNTED) is skipped, saying which.
 */
class PortCountersConformanceTest extends ConformanceTest {
  /** The responder's min_rnr_timer: 0.64 ms, so a 50 ms wait is some dozens of RNR NAKs. */
  private static final int RNR_TIMER = 12;
  private static final Duration RECEIVE_LATE = Duration.ofMillis(50);

  /** One field of PortCounters, named for messages. */
  private record Field(String name, ToLongFunction<PortCounters> value) {
    long of(PortCounters c) {
      return value.applyAsLong(c);
    }
  }

  private static final Field PACKETS_SENT = new Field("packetsSent", PortCounters::packetsSent);
  private static final Field PACKETS_RECEIVED =
      new Field("packetsReceived", PortCounters::packetsReceived);
  private static final Field RNR_NAKS_RECEIVED =
      new Field("rnrNaksReceived", PortCounters::rnrNaksReceived);
  private static final Field RNR_NAKS_SENT = new Field("rnrNaksSent", PortCounters::rnrNaksSent);
  private static final Field RETRIES = new Field("retries", PortCounters::retries);
  private static final Field RETRIES_EXCEEDED =
      new Field("retriesExceeded", PortCounters::retriesExceeded);
  private static final Field RNR_RETRIES_EXCEEDED =
      new Field("rnrRetriesExceeded", PortCounters::rnrRetriesExceeded);

  /** rxe's hw_counters name of each field: the soft provider uses them too. */
  private static final Map<String, Field> RXE_NAMES = Map.of("sent_pkts", PACKETS_SENT,
      "rcvd_pkts", PACKETS_RECEIVED, "rcvd_rnr_err", RNR_NAKS_RECEIVED,
      "send_rnr_err", RNR_NAKS_SENT, "completer_retry_err", RETRIES,
      "retry_exceeded_err", RETRIES_EXCEEDED, "retry_rnr_exceeded_err", RNR_RETRIES_EXCEEDED);

  private PortCounters counters() {
    return fx.context.queryPortCounters(fx.port);
  }

  @Test
  void countersAreNumbersOrNotCountedAndAgreeWithTheirNames() {
    PortCounters c = counters();
    System.out.println("[conformance] counters of port " + fx.port + ": " + c);
    for (Field f : RXE_NAMES.values()) {
      assertTrue(f.of(c) >= 0 || f.of(c) == NOT_COUNTED, f.name() + " of " + c);
    }
    c.all().forEach((name, v) -> assertTrue(v >= 0, name + " = " + v + " in all"));
    RXE_NAMES.forEach((name, f) -> {
      if (c.all().containsKey(name)) {
        assertEquals(c.all().get(name), f.of(c), f.name() + " and all's " + name + ": " + c);
      }
    });
  }

  @Test
  void anRnrWaitCountsRnrNaksAndPackets() {
    try (RcPair p = RcPair.builder().a(Link.defaults().sqPsn(1).rnrRetry(7)) // 7: for ever
        .b(Link.defaults().sqPsn(2).minRnrTimer(RNR_TIMER)).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      PortCounters before = counters();
      send(p.a, 1, SIGNALED, a, 0, 32);
      Completions.expectNone(p.aSendCq, "A send CQ (no receive posted yet, rnr_retry 7)",
          RECEIVE_LATE);
      postRecv(p.b, 2, b, 0, 64);
      Completions.awaitSuccess(p.aSendCq, "A send CQ (the receive came "
          + RECEIVE_LATE.toMillis() + " ms late)", 1, WcOpcode.SEND);
      Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 2, WcOpcode.RECV);
      // A and B share the port: it both met and sent the RNR NAKs
      skipNotCounted(awaitGrowth(before, "a send that waited for a receive", RNR_NAKS_RECEIVED,
          RNR_NAKS_SENT, PACKETS_SENT, PACKETS_RECEIVED));
    }
  }

  @Test
  void spentRnrRetriesAreCounted() {
    try (RcPair p = RcPair.builder().a(Link.defaults().sqPsn(1).rnrRetry(0))
        .b(Link.defaults().sqPsn(2).minRnrTimer(1)).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      PortCounters before = counters();
      send(p.a, 3, SIGNALED, a, 0, 32);
      Completions.awaitStatus(p.aSendCq, "A send CQ (no receive posted, rnr_retry 0)", 3,
          WcStatus.RNR_RETRY_EXC_ERR);
      skipNotCounted(awaitGrowth(before, "a send whose RNR retries were spent",
          RNR_RETRIES_EXCEEDED, RNR_NAKS_RECEIVED, RNR_NAKS_SENT, PACKETS_SENT));
    }
  }

  @Test
  void spentTransportRetriesAreCounted() {
    try (RcPair p = RcPair.builder().a(Link.defaults().sqPsn(1).failFast()).build(fx);
        Region a = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region b = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      long addr = b.address();
      int rkey = b.rkey();
      p.closeB(); // nobody answers: one retry (retry_cnt 1), then RETRY_EXC_ERR
      PortCounters before = counters();
      write(p.a, 4, SIGNALED, a, 0, 32, addr, rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (peer QP destroyed, retry_cnt 1)", 4,
          WcStatus.RETRY_EXC_ERR);
      skipNotCounted(awaitGrowth(before, "a write nobody answered", RETRIES, RETRIES_EXCEEDED,
          PACKETS_SENT));
    }
  }

  @Test
  void aMissingPortFailsNamingIt() {
    int ports = fx.attributes.physPortCnt();
    assertRdma(RdmaException.EINVAL, () -> fx.context.queryPortCounters(ports + 1),
        "queryPortCounters(" + (ports + 1) + ") on a device with " + ports + " port(s)",
        "port " + (ports + 1));
    assertRdma(RdmaException.EINVAL, () -> fx.context.queryPortCounters(0),
        "queryPortCounters(0)", "port 0");
  }

  /**
   * Reads the counters until every counted one of {@code fields} grew past {@code before} (a
   * kernel caches hw_counters for their lifespan, 10 ms by default, so the first read after the
   * event may not show it yet); returns the fields the device does not count.
   */
  private List<String> awaitGrowth(PortCounters before, String what, Field... fields) {
    long deadline = System.nanoTime() + ConformanceProvider.TIMEOUT.toNanos();
    while (true) {
      PortCounters now = counters();
      List<String> notCounted = new ArrayList<>();
      List<String> stuck = new ArrayList<>();
      for (Field f : fields) {
        if (f.of(now) == NOT_COUNTED) notCounted.add(f.name());
        else if (f.of(now) <= f.of(before)) stuck.add(f.name() + " " + f.of(now));
      }
      if (stuck.isEmpty()) {
        StringBuilder grew = new StringBuilder();
        for (Field f : fields) {
          grew.append(grew.length() == 0 ? "" : ", ").append(f.name()).append(' ')
              .append(f.of(before)).append(" -> ").append(f.of(now));
        }
        System.out.println("[conformance] " + testName + ": after " + what + ": " + grew);
        return notCounted;
      }
      if (System.nanoTime() > deadline) {
        fail("after " + what + ", " + stuck + " did not grow within "
            + ConformanceProvider.TIMEOUT.toMillis() + " ms; before: " + before + ", now: " + now);
      }
      sleep(Duration.ofMillis(20));
    }
  }

  /** Everything counted grew; what the device does not count is said, as a skip. */
  private void skipNotCounted(List<String> notCounted) {
    skipUnless(notCounted.isEmpty(), "the device does not count " + notCounted
        + " (NOT_COUNTED); the counters it keeps grew");
  }
}
