package dev.pekkordma.runtime.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class ConnectAttemptTest {
  private static final String SETTING = "pekko-rdma.test.connect-timeout";

  /** Records every action as a line; a step may be told to throw. */
  private static final class Recorder implements ConnectAttempt.ConnectSteps {
    final List<String> done = new ArrayList<>();
    String failing;

    @Override
    public void deadlineIn(Duration after) {
      done.add("deadline " + after.toMillis());
    }

    @Override
    public void resolveAddress(Duration timeLeft) {
      step("resolveAddress", timeLeft);
    }

    @Override
    public void resolveRoute(Duration timeLeft) {
      step("resolveRoute", timeLeft);
    }

    @Override
    public void connect(Duration timeLeft) {
      step("connect", timeLeft);
    }

    private void step(String name, Duration timeLeft) {
      if (name.equals(failing)) throw new IllegalStateException("no memory for it");
      done.add(name + " " + timeLeft.toMillis());
    }

    @Override
    public void established(CmEvent event) {
      done.add("established");
    }

    @Override
    public void rejected(CmEvent event) {
      done.add("rejected");
    }

    @Override
    public void failed(ConnectAttempt.Failure why) {
      done.add("failed: " + why.reason());
    }

    long ends() {
      return done.stream().filter(s -> s.equals("established") || s.equals("rejected")
          || s.startsWith("failed")).count();
    }
  }

  private final long[] now = {0};
  private final Recorder actions = new Recorder();
  private final ConnectAttempt attempt =
      new ConnectAttempt(Duration.ofSeconds(10), SETTING, () -> now[0], actions);

  private static CmEvent event(CmEventType type, int status) {
    return new CmEvent(type, null, null, status, null, null);
  }

  private void advance(long millis) {
    now[0] += millis * 1_000_000L;
  }

  @Test
  void eachStepIsGivenWhatIsLeftOfTheOneDeadline() {
    attempt.resolve();
    advance(1_500);
    attempt.cmEvent(event(CmEventType.ADDR_RESOLVED, 0));
    advance(2_000);
    attempt.cmEvent(event(CmEventType.ROUTE_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.ESTABLISHED, 0));
    assertEquals(List.of("deadline 10000", "resolveAddress 10000", "resolveRoute 8500",
        "connect 6500", "established"), actions.done);
    attempt.deadlinePassed();
    assertEquals(5, actions.done.size(), "a deadline after ESTABLISHED is nothing");
  }

  @Test
  void theDeadlineCountsWhatCameBeforeTheAddressWasKnown() {
    attempt.begin();
    advance(4_000); // a host name resolving
    attempt.resolve();
    assertEquals(List.of("deadline 10000", "resolveAddress 6000"), actions.done);
  }

  @Test
  void aPassedDeadlineFailsTheAttemptNamingTheSetting() {
    attempt.resolve();
    attempt.cmEvent(event(CmEventType.ADDR_RESOLVED, 0));
    attempt.deadlinePassed();
    assertEquals("failed: not connected within PT10S (" + SETTING + ")",
        actions.done.get(actions.done.size() - 1));
    assertEquals(ConnectAttempt.Step.FAILED, attempt.step());
    attempt.cmEvent(event(CmEventType.ROUTE_RESOLVED, 0));
    assertEquals(1, actions.ends(), "nothing after the end");
  }

  @Test
  void aStepLeftWithNoTimeStillGetsAMillisecond() {
    attempt.resolve();
    advance(11_000);
    attempt.cmEvent(event(CmEventType.ADDR_RESOLVED, 0));
    assertEquals("resolveRoute 1", actions.done.get(2));
  }

  @Test
  void theCmsErrorsEndTheAttemptWithTheirStatus() {
    attempt.resolve();
    attempt.cmEvent(event(CmEventType.ADDR_ERROR, -19));
    assertEquals("failed: ADDR_ERROR (status -19, ENODEV)", actions.done.get(2));
  }

  @Test
  void aRejectByTheServersApplicationIsAnAnswerNotAFailure() {
    attempt.resolve();
    attempt.cmEvent(event(CmEventType.ADDR_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.ROUTE_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.REJECTED, CmEvent.REJECT_CONSUMER_DEFINED));
    assertEquals("rejected", actions.done.get(actions.done.size() - 1));
  }

  @Test
  void nobodyListeningIsAFailure() {
    attempt.resolve();
    attempt.cmEvent(event(CmEventType.ADDR_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.ROUTE_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.REJECTED, CmEvent.REJECT_NO_LISTENER));
    assertEquals("failed: REJECTED (status 8)", actions.done.get(actions.done.size() - 1));
  }

  @Test
  void aStepThatThrowsFailsTheAttemptSayingWhichStep() {
    actions.failing = "connect";
    attempt.resolve();
    attempt.cmEvent(event(CmEventType.ADDR_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.ROUTE_RESOLVED, 0));
    assertEquals("failed: rdma_connect: no memory for it",
        actions.done.get(actions.done.size() - 1));
  }

  @Test
  void eventsOutOfOrderAreNotSteps() {
    attempt.resolve();
    attempt.cmEvent(event(CmEventType.ESTABLISHED, 0)); // before the route: not ours to take
    attempt.cmEvent(event(CmEventType.ROUTE_RESOLVED, 0));
    attempt.cmEvent(event(CmEventType.TIMEWAIT_EXIT, 0));
    assertEquals(List.of("deadline 10000", "resolveAddress 10000"), actions.done);
    assertEquals(ConnectAttempt.Step.RESOLVING_ADDRESS, attempt.step());
  }

  @Test
  void aTimeoutThatIsNotPositiveIsRefusedNamingTheSetting() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new ConnectAttempt(Duration.ZERO, SETTING, System::nanoTime, actions));
    assertTrue(e.getMessage().contains(SETTING), e.getMessage());
  }

  // ------------------------------------------------------------ any order of anything

  /** Any event, in any order, with the deadline and failing steps among them. */
  @Property(tries = 500)
  void anyEventsEndAnAttemptAtMostOnceAndNeverStepBack(
      @ForAll("happenings") List<Integer> happenings) {
    long[] clock = {0};
    Recorder r = new Recorder();
    ConnectAttempt a = new ConnectAttempt(Duration.ofSeconds(3), SETTING, () -> clock[0], r);
    CmEventType[] types = CmEventType.values();
    ConnectAttempt.Step before = a.step();
    for (int h : happenings) {
      if (h < types.length) {
        a.cmEvent(event(types[h], h % 3 == 0 ? CmEvent.REJECT_CONSUMER_DEFINED : 0));
      } else if (h == types.length) {
        a.deadlinePassed();
      } else if (h == types.length + 1) {
        a.resolve();
      } else {
        clock[0] += 700_000_000L;
        r.failing = r.failing == null ? "resolveRoute" : null;
      }
      ConnectAttempt.Step now = a.step();
      assertTrue(now.ordinal() >= before.ordinal() || now == ConnectAttempt.Step.FAILED,
          before + " went back to " + now);
      if (before.over()) assertEquals(before, now, "an attempt over stays over");
      before = now;
    }
    assertTrue(r.ends() <= 1, "ended more than once: " + r.done);
    assertEquals(a.step().over() ? 1 : 0, r.ends(), "over exactly when it said so: " + r.done);
    r.done.stream().filter(s -> s.startsWith("resolve") || s.startsWith("connect"))
        .forEach(s -> assertTrue(Long.parseLong(s.substring(s.indexOf(' ') + 1)) >= 1, s));
  }

  @Provide
  Arbitrary<List<Integer>> happenings() {
    return Arbitraries.integers().between(0, CmEventType.values().length + 2)
        .list().ofMaxSize(30);
  }
}
