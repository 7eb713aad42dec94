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

class AcceptAttemptTest {
  private static final String DECIDE = "test.accept-timeout";
  private static final String CONFIRM = "test.connect-timeout";

  /** Records every action as a line; the accept may be told to throw. */
  private static final class Recorder implements AcceptAttempt.AcceptSteps {
    final List<String> done = new ArrayList<>();
    boolean acceptThrows;

    @Override
    public void deadlineIn(Duration after) {
      done.add("deadline " + after.toMillis());
    }

    @Override
    public void accept() {
      if (acceptThrows) throw new IllegalStateException("the device refused it");
      done.add("accept");
    }

    @Override
    public void reject(byte[] privateData, String why) {
      done.add("reject" + (privateData == null ? "" : " " + privateData.length)
          + (why == null ? "" : ": " + why));
    }

    @Override
    public void established(CmEvent event) {
      done.add("established");
    }

    @Override
    public void failed(ConnectAttempt.Failure why) {
      done.add("failed: " + why.reason());
    }

    String last() {
      return done.get(done.size() - 1);
    }

    long ends() {
      return done.stream().filter(s -> s.equals("established") || s.startsWith("reject")
          || s.startsWith("failed")).count();
    }
  }

  private final Recorder actions = new Recorder();
  private final AcceptAttempt attempt = new AcceptAttempt(Duration.ofSeconds(5), DECIDE,
      Duration.ofSeconds(10), CONFIRM, actions);

  private static CmEvent event(CmEventType type) {
    return new CmEvent(type, null, null, 0, null, null);
  }

  @Test
  void theDecisionHasItsDeadlineThenTheClientHasItsOwn() {
    attempt.accept();
    attempt.cmEvent(event(CmEventType.ESTABLISHED));
    assertEquals(List.of("deadline 5000", "deadline 10000", "accept", "established"),
        actions.done);
    attempt.deadlinePassed();
    assertEquals(4, actions.done.size(), "a deadline after ESTABLISHED is nothing");
  }

  @Test
  void aRequestNobodyDecidedOnIsRejectedSayingWhy() {
    attempt.deadlinePassed();
    assertEquals("reject: nobody accepted or rejected it within PT5S (" + DECIDE + ")",
        actions.last());
    attempt.accept();
    assertEquals(AcceptAttempt.RequestStep.REJECTED, attempt.step(), "too late to accept");
  }

  @Test
  void aClientThatNeverConfirmsFailsTheAttemptNamingTheSetting() {
    attempt.accept();
    attempt.deadlinePassed();
    assertEquals("failed: the client did not confirm within PT10S (" + CONFIRM + ")",
        actions.last());
  }

  @Test
  void theApplicationsRejectCarriesItsPrivateData() {
    attempt.reject(new byte[3]);
    assertEquals("reject 3", actions.last());
    assertEquals(AcceptAttempt.RequestStep.REJECTED, attempt.step());
  }

  @Test
  void anAcceptThatThrowsFailsTheAttempt() {
    actions.acceptThrows = true;
    attempt.accept();
    assertEquals("failed: rdma_accept: the device refused it", actions.last());
  }

  @Test
  void theClientGoingFirstFailsTheAttemptWithTheEvent() {
    attempt.accept();
    attempt.cmEvent(event(CmEventType.DISCONNECTED));
    assertEquals("failed: DISCONNECTED", actions.last());
  }

  @Test
  void establishedBeforeTheAcceptIsNotTaken() {
    attempt.cmEvent(event(CmEventType.ESTABLISHED));
    assertEquals(AcceptAttempt.RequestStep.REQUESTED, attempt.step());
  }

  @Test
  void timeoutsThatAreNotPositiveAreRefusedNamingTheSetting() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new AcceptAttempt(Duration.ofSeconds(1), DECIDE, Duration.ZERO, CONFIRM, actions));
    assertTrue(e.getMessage().contains(CONFIRM), e.getMessage());
  }

  /** Any event, in any order, with decisions and the deadline among them. */
  @Property(tries = 500)
  void anyEventsEndARequestAtMostOnce(@ForAll("happenings") List<Integer> happenings) {
    Recorder r = new Recorder();
    AcceptAttempt a = new AcceptAttempt(Duration.ofSeconds(1), DECIDE, Duration.ofSeconds(2),
        CONFIRM, r);
    CmEventType[] types = CmEventType.values();
    AcceptAttempt.RequestStep before = a.step();
    for (int h : happenings) {
      if (h < types.length) {
        a.cmEvent(event(types[h]));
      } else if (h == types.length) {
        a.deadlinePassed();
      } else if (h == types.length + 1) {
        a.accept();
      } else if (h == types.length + 2) {
        a.reject(null);
      } else {
        r.acceptThrows = !r.acceptThrows;
      }
      if (before.over()) assertEquals(before, a.step(), "a request over stays over");
      before = a.step();
    }
    assertTrue(r.ends() <= 1, "ended more than once: " + r.done);
    assertEquals(a.step().over() ? 1 : 0, r.ends(), "over exactly when it said so: " + r.done);
    assertTrue(r.done.indexOf("established") < 0 || r.done.indexOf("accept") >= 0,
        "established only after an accept: " + r.done);
  }

  @Provide
  Arbitrary<List<Integer>> happenings() {
    return Arbitraries.integers().between(0, CmEventType.values().length + 3)
        .list().ofMaxSize(30);
  }
}
