package dev.pekkordma.runtime.internal;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * One client attempt at an RDMA CM connection, as events in and actions out: resolve the
 * address, then the route, then connect, until ESTABLISHED. Both facades' clients (the actors'
 * connector, a stream's connection) run it; what follows a failure (another attempt with
 * backoff, or a failed stream as Tcp's) is theirs.
 *
 * <p>The timeout policy, the one of every client in the project: an attempt has one deadline,
 * its facade's {@code connect-timeout}, from its start to ESTABLISHED. Each CM step is given what
 * is left of it, so that the CM's own ADDR_ERROR, ROUTE_ERROR or UNREACHABLE reports a failure
 * first when it can; the deadline passing fails the attempt naming the setting. One number for
 * the user to reason about, as Tcp's {@code connect-timeout}, whichever step is slow.
 */
@InternalApi
public final class ConnectAttempt {
  /** Where the attempt is. */
  public enum Step {
    NOT_STARTED, RESOLVING_ADDRESS, RESOLVING_ROUTE, CONNECTING, ESTABLISHED, FAILED;

    /** ESTABLISHED or FAILED: no event changes it any more. */
    public boolean over() {
      return this == ESTABLISHED || this == FAILED;
    }
  }

  /**
   * What the attempt asks of its facade. A step that throws fails the attempt with its message;
   * the facade passes the CM events of the attempt's id to {@link #cmEvent}.
   */
  public interface ConnectSteps {
    /** Arm the one timer: {@link #deadlinePassed} after {@code after}. */
    void deadlineIn(Duration after);

    /** {@code rdma_resolve_addr}, within {@code timeLeft}. */
    void resolveAddress(Duration timeLeft);

    /** {@code rdma_resolve_route}, within {@code timeLeft} (the device is known now). */
    void resolveRoute(Duration timeLeft);

    /** {@code rdma_connect} (with what the facade opens first), within {@code timeLeft}. */
    void connect(Duration timeLeft);

    void established(CmEvent event);

    /** The server's application rejected the request: an answer, not a failure to retry. */
    void rejected(CmEvent event);

    void failed(Failure why);
  }

  /**
   * Why an attempt failed: {@code reason} always; the CM's {@code event} when it said so, what a
   * step {@code threw} when it threw (either may be null).
   */
  public record Failure(String reason, CmEvent event, RuntimeException threw) {}

  private final Duration timeout;
  private final String setting;
  private final LongSupplier nanoClock;
  private final ConnectSteps actions;
  private Step step = Step.NOT_STARTED;
  private long deadline;
  private boolean begun;

  /**
   * An attempt that must be established within {@code timeout}, which is the setting {@code
   * setting} (named by a failure); {@code nanoClock} is {@link System#nanoTime} but in tests.
   */
  public ConnectAttempt(Duration timeout, String setting, LongSupplier nanoClock,
      ConnectSteps actions) {
    this.timeout = positive(timeout, setting);
    this.setting = setting;
    this.nanoClock = nanoClock;
    this.actions = actions;
  }

  public Step step() {
    return step;
  }

  /**
   * The deadline starts now, before the address is known (a facade that resolves a host name
   * first counts that in, as Tcp does); {@link #resolve} comes when the address is there.
   */
  public void begin() {
    if (begun) return;
    begun = true;
    deadline = nanoClock.getAsLong() + timeout.toNanos();
    actions.deadlineIn(timeout);
  }

  /** Resolves the address (beginning the deadline if {@link #begin} did not). */
  public void resolve() {
    begin();
    if (step != Step.NOT_STARTED) return;
    step = Step.RESOLVING_ADDRESS;
    run("rdma_resolve_addr", () -> actions.resolveAddress(timeLeft()));
  }

  /** An event of the attempt's id. */
  public void cmEvent(CmEvent e) {
    if (step.over()) return;
    CmEventType t = e.type();
    if (t == CmEventType.ADDR_RESOLVED && step == Step.RESOLVING_ADDRESS) {
      step = Step.RESOLVING_ROUTE;
      run("on " + t, () -> actions.resolveRoute(timeLeft()));
    } else if (t == CmEventType.ROUTE_RESOLVED && step == Step.RESOLVING_ROUTE) {
      step = Step.CONNECTING;
      run("rdma_connect", () -> actions.connect(timeLeft()));
    } else if (t == CmEventType.ESTABLISHED && step == Step.CONNECTING) {
      step = Step.ESTABLISHED;
      actions.established(e);
    } else if (t == CmEventType.REJECTED && e.status() == CmEvent.REJECT_CONSUMER_DEFINED
        && step == Step.CONNECTING) {
      step = Step.FAILED;
      actions.rejected(e);
    } else if (endsAnAttempt(t)) {
      fail(new Failure(e.outcome(), e, null));
    }
    // the rest (an ADDR_CHANGE, a late TIMEWAIT_EXIT) says nothing about the attempt
  }

  /** The facade's timer, armed by {@link ConnectSteps#deadlineIn}. */
  public void deadlinePassed() {
    if (step.over()) return;
    fail(new Failure("not connected within " + timeout + " (" + setting + ")", null, null));
  }

  /** A step the facade runs on its own (say, the QP it opens for the connect) failed. */
  public void stepFailed(String reason) {
    if (!step.over()) fail(new Failure(reason, null, null));
  }

  /** Before ESTABLISHED, these end an attempt, a client's or a server's. */
  static boolean endsAnAttempt(CmEventType t) {
    return switch (t) {
      case ADDR_ERROR, ROUTE_ERROR, CONNECT_ERROR, UNREACHABLE, REJECTED, DISCONNECTED,
          DEVICE_REMOVAL -> true;
      default -> false;
    };
  }

  /** {@code timeout}, refused naming {@code setting} unless positive. */
  static Duration positive(Duration timeout, String setting) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(setting + " must be positive, was " + timeout);
    }
    return timeout;
  }

  /** What is left of the deadline; at least a millisecond, since the CM takes no zero. */
  private Duration timeLeft() {
    long left = deadline - nanoClock.getAsLong();
    return Duration.ofNanos(Math.max(left, 1_000_000L));
  }

  private void run(String doing, Runnable stepAction) {
    try {
      stepAction.run();
    } catch (RuntimeException ex) {
      fail(new Failure(doing + ": " + ex.getMessage(), null, ex));
    }
  }

  private void fail(Failure why) {
    step = Step.FAILED;
    actions.failed(why);
  }
}
