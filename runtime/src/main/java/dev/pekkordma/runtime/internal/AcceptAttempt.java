package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import java.time.Duration;

/**
 * The server's side of one connection request, as events in and actions out: the application
 * decides (accept or reject), then the client confirms (ESTABLISHED). Both facades' servers run
 * it: the actors' connection, whose handler decides, and a stream binding, which accepts each
 * request as it arrives, as a kernel accepts a TCP connection before the application takes it.
 *
 * <p>The timeout policy, the counterpart of {@link ConnectAttempt}'s: the decision has a deadline
 * of its own (the facade's {@code accept-timeout}; a request nobody decided on is rejected, so
 * that the client hears at once rather than at its own deadline), and an accepted connection must
 * be established within the facade's {@code connect-timeout} of the accept.
 */
@InternalApi
public final class AcceptAttempt {
  /** Where the attempt is. */
  public enum RequestStep {
    REQUESTED, ACCEPTING, ESTABLISHED, REJECTED, FAILED;

    /** ESTABLISHED, REJECTED or FAILED: no event changes it any more. */
    public boolean over() {
      return this == ESTABLISHED || this == REJECTED || this == FAILED;
    }
  }

  /** What the attempt asks of its facade; an accept that throws fails it with its message. */
  public interface AcceptSteps {
    /** Arm the one timer: {@link #deadlinePassed} after {@code after} (it replaces the last). */
    void deadlineIn(Duration after);

    /** {@code rdma_accept}, with what the facade opens for the connection. */
    void accept();

    /**
     * {@code rdma_reject} with {@code privateData} (may be null); {@code why} says why when it
     * was not the application's choice (nobody decided in time), else null.
     */
    void reject(byte[] privateData, String why);

    void established(CmEvent event);

    void failed(ConnectAttempt.Failure why);
  }

  private final Duration decideWithin;
  private final String decideSetting;
  private final Duration confirmWithin;
  private final String confirmSetting;
  private final AcceptSteps actions;
  private RequestStep step;

  /**
   * A request the application must decide on within {@code decideWithin} (the setting {@code
   * decideSetting}) and that, accepted, must be established within {@code confirmWithin} ({@code
   * confirmSetting}). The decision's deadline starts now.
   */
  public AcceptAttempt(Duration decideWithin, String decideSetting, Duration confirmWithin,
      String confirmSetting, AcceptSteps actions) {
    this.decideWithin = ConnectAttempt.positive(decideWithin, decideSetting);
    this.decideSetting = decideSetting;
    this.confirmWithin = ConnectAttempt.positive(confirmWithin, confirmSetting);
    this.confirmSetting = confirmSetting;
    this.actions = actions;
    this.step = RequestStep.REQUESTED;
    actions.deadlineIn(decideWithin);
  }

  public RequestStep step() {
    return step;
  }

  /** The application accepts: the client has {@code connect-timeout} to confirm. */
  public void accept() {
    if (step != RequestStep.REQUESTED) return;
    step = RequestStep.ACCEPTING;
    actions.deadlineIn(confirmWithin);
    try {
      actions.accept();
    } catch (RuntimeException e) {
      fail(new ConnectAttempt.Failure("rdma_accept: " + e.getMessage(), null, e));
    }
  }

  /** The application rejects, with {@code privateData} for the client (may be null). */
  public void reject(byte[] privateData) {
    if (step != RequestStep.REQUESTED) return;
    step = RequestStep.REJECTED;
    actions.reject(privateData, null);
  }

  /** An event of the request's id. */
  public void cmEvent(CmEvent e) {
    if (step.over()) return;
    if (e.type() == CmEventType.ESTABLISHED && step == RequestStep.ACCEPTING) {
      step = RequestStep.ESTABLISHED;
      actions.established(e);
    } else if (ConnectAttempt.endsAnAttempt(e.type())) {
      fail(new ConnectAttempt.Failure(e.outcome(), e, null));
    }
  }

  /** The facade's timer, armed by {@link AcceptSteps#deadlineIn}. */
  public void deadlinePassed() {
    if (step == RequestStep.REQUESTED) {
      step = RequestStep.REJECTED;
      actions.reject(null, "nobody accepted or rejected it within " + decideWithin + " ("
          + decideSetting + ")");
    } else if (step == RequestStep.ACCEPTING) {
      fail(new ConnectAttempt.Failure("the client did not confirm within " + confirmWithin
          + " (" + confirmSetting + ")", null, null));
    }
  }

  /** Something the facade does for the connection on its own (its QP, say) failed. */
  public void stepFailed(String reason) {
    if (!step.over()) fail(new ConnectAttempt.Failure(reason, null, null));
  }

  private void fail(ConnectAttempt.Failure why) {
    step = RequestStep.FAILED;
    actions.failed(why);
  }
}
