package dev.pekkordma.actors;

import dev.pekkordma.actors.DeviceSession.CqEntry;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.IllegalQpTransitionException;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpStateMachine;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.PreRestart;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.BehaviorBuilder;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.pattern.StatusReply;

/**
 * Owns one QP (and the CQ that serves both its queues) and is its state machine: one behavior
 * per QP state. A modify is checked with {@link QpStateMachine} first, so an illegal transition
 * is answered with {@link TransitionRejected} and never reaches verbs. Work requests name a
 * {@link Buffer}; the actor tracks each until its completion, which goes to the requester in a
 * batch per poll. In ERR every outstanding request still completes through the CQ, with its own
 * status: one the QP finished before the error is no flush. Stopping or restarting destroys the
 * QP; what had no completion by then is reported flushed.
 *
 * <p>Buffers: a posted buffer belongs to the actor until its completion. A successful receive or
 * read hands it back in the {@link Completion}; in every other case (sends, writes, errors,
 * flushes) the actor returns it to its pool once the QP can no longer touch it.
 */
public final class QpActor {
  private QpActor() {}

  // ---------------------------------------------------------------- protocol

  public sealed interface Command {}

  /** Modify the QP ({@code ibv_modify_qp}); don't change the attributes after sending. */
  public record Modify(QpAttributes attributes, ActorRef<ModifyResult> replyTo)
      implements Command {}

  /** Post work requests: receives first, then sends, each kind in one verbs call. */
  public record Post(List<Work> work, ActorRef<WorkResult> replyTo) implements Command {
    public Post {
      work = List.copyOf(work);
    }

    public static Post of(Work work, ActorRef<WorkResult> replyTo) {
      return new Post(List.of(work), replyTo);
    }
  }

  public record GetState(ActorRef<QpInfo> replyTo) implements Command {}

  // From the poller and the event reader. Each names its CQ or QP: after a restart, what the
  // old ones left must not reach the new ones.

  /** The poller's completions from a CQ of this actor. */
  record Completions(CqEntry cq, CompletionBatch batch)
      implements Command, DeadLetterSuppression {}

  /** The CQ could not be polled (it overran). */
  record CqFailed(CqEntry cq, String reason) implements Command {}

  /** An async event of a QP (by number, else -1) or a CQ (else null) of this actor. */
  record AsyncEventArrived(AsyncEventType type, int qpNum, CqEntry cq) implements Command {}

  /** Something else (the CM) moved the QP: follow its state. */
  record Sync(String cause) implements Command, DeadLetterSuppression {}

  /**
   * The connection over the QP ended: move it to ERR if the CM has not, report every request's
   * completion as the CQ gives it, then stop (which destroys the QP).
   */
  record Finish(String cause) implements Command, DeadLetterSuppression {}

  /** After an error completion: has the QP left its state yet? */
  private record ErrorSync(WcStatus status, int tries) implements Command {}

  /** The verbs QP itself, for fault injection in tests. */
  record Inspect(ActorRef<QueuePair> replyTo) implements Command {}

  public record QpInfo(int qpNum, QpType type, QpState state, int maxSendWr, int maxRecvWr) {}

  public sealed interface ModifyResult {
    int qpNum();
  }

  public record Transitioned(int qpNum, QpState from, QpState to) implements ModifyResult {}

  /** The transition does not exist or lacks attributes; verbs were not called. */
  public record TransitionRejected(int qpNum, QpState state, QpState requested, String why)
      implements ModifyResult {}

  /** Verbs refused the modify (a bad attribute value); {@code state} is the QP's state now. */
  public record TransitionFailed(int qpNum, QpState state, QpState requested, String why)
      implements ModifyResult {}

  /** A work request; {@code id} is the requester's own, echoed in its completion. */
  public sealed interface Work {
    long id();

    Buffer buffer();
  }

  /** SEND of {@code [0, length)} of the buffer, with immediate data when not null. */
  public record Send(long id, Buffer buffer, int length, Integer immediate) implements Work {
    public Send(long id, Buffer buffer, int length) {
      this(id, buffer, length, null);
    }
  }

  /** RDMA WRITE of {@code [0, length)} to the peer's memory, with immediate data when not null. */
  public record Write(long id, Buffer buffer, int length, long remoteAddress, int rkey,
      Integer immediate) implements Work {}

  /** RDMA READ of {@code length} bytes from the peer's memory into the buffer. */
  public record Read(long id, Buffer buffer, int length, long remoteAddress, int rkey)
      implements Work {}

  /** A receive into the whole buffer. */
  public record Receive(long id, Buffer buffer) implements Work {}

  public sealed interface WorkResult {
    int qpNum();
  }

  /** Completions of one poll batch for one requester. */
  public record Completed(int qpNum, List<Completion> completions) implements WorkResult {}

  /** Nothing of the batch was posted: its buffers are still the requester's to reuse or release. */
  public record PostRejected(int qpNum, QpState state, List<Long> ids, String why)
      implements WorkResult {}

  /**
   * One work request's completion. {@code buffer} is set for a successful receive or read: the
   * requester releases it. {@code opcode} is null where verbs leave it undefined (errors).
   */
  public record Completion(long id, WcStatus status, WcOpcode opcode, int byteLength,
      Integer immediate, Buffer buffer) {
    public boolean ok() {
      return status == WcStatus.SUCCESS;
    }
  }

  /** What the QP's owner hears. */
  public sealed interface Event {
    int qpNum();
  }

  /**
   * The QP changed state. A note, not a request: an owner that has stopped (its connection ended
   * in order, the QP's last change racing its stop) has no use for it, so it is no dead letter.
   */
  public record StateChanged(int qpNum, QpState from, QpState to, String cause)
      implements Event, DeadLetterSuppression {}

  public record AsyncEventReceived(int qpNum, AsyncEventType type) implements Event {}

  /** The QP or its CQ failed; with {@code restarting} a new QP follows after the backoff. */
  public record Fatal(int qpNum, String reason, boolean restarting) implements Event {}

  /**
   * The QP went to the error state on its own, and its provider says why (the peer, and what it
   * did or failed to do): a request completed with {@code status}. A connection over it is over.
   */
  public record Failed(int qpNum, WcStatus status, String reason) implements Event {}

  /** A new QP replaced the failed one; it starts in RESET. */
  public record Restarted(int qpNum, int previousQpNum) implements Event {}

  // ---------------------------------------------------------------- creation

  /** How the QP is made and destroyed: by verbs, or by a CM id. */
  interface QpMaker {
    QueuePair create(ProtectionDomain pd, QpInitAttributes attributes);

    void destroy(QueuePair qp);
  }

  static final QpMaker VERBS = new QpMaker() {
    @Override
    public QueuePair create(ProtectionDomain pd, QpInitAttributes attributes) {
      return pd.createQp(attributes);
    }

    @Override
    public void destroy(QueuePair qp) {
      qp.close();
    }
  };

  /** Thrown to have the supervisor make a new QP. */
  static final class QpFatalException extends RuntimeException {
    QpFatalException(String message) {
      super(message);
    }
  }

  /** What outlives a restart of the QP: who waits for its ref, and the last QP number. */
  private static final class QpLineage {
    ActorRef<StatusReply<ActorRef<Command>>> replyTo;
    int lastQpNum = -1;
  }

  static Behavior<Command> create(DeviceSession session, ProtectionDomain pd, QpSpec spec,
      ActorRef<Event> owner, ActorRef<StatusReply<ActorRef<Command>>> replyTo, QpMaker maker) {
    return Behaviors.setup(outer -> {
      QpLineage lineage = new QpLineage();
      lineage.replyTo = replyTo;
      Behavior<Command> start =
          Behaviors.setup(ctx -> Incarnation.start(ctx, session, pd, spec, owner, maker, lineage));
      if (!spec.restartOnFatal()) return start;
      var b = session.settings.qpRestartBackoff;
      return Behaviors.supervise(start).onFailure(QpFatalException.class,
          SupervisorStrategy.restartWithBackoff(b.min(), b.max(), b.randomFactor()));
    });
  }

  /** One QP's life: a restart makes a new incarnation. */
  private static final class Incarnation {
    private final ActorContext<Command> ctx;
    private final DeviceSession session;
    private final QpSpec spec;
    private final ActorRef<Event> owner;
    private final QpMaker maker;
    private final QueuePair qp;
    private final CqEntry cq;
    private final int qpNum;
    private final PostedWork posted;
    private static final int ERROR_SYNC_TRIES = 20;
    private static final java.time.Duration ERROR_SYNC_PAUSE = java.time.Duration.ofMillis(10);
    private QpState state;
    private boolean cqBroken;
    private boolean destroyed;

    private Incarnation(ActorContext<Command> ctx, DeviceSession session, QpSpec spec,
        ActorRef<Event> owner, QpMaker maker, QueuePair qp, CqEntry cq) {
      this.ctx = ctx;
      this.session = session;
      this.spec = spec;
      this.owner = owner;
      this.maker = maker;
      this.qp = qp;
      this.cq = cq;
      this.qpNum = qp.qpNum();
      this.state = qp.state();
      this.posted = new PostedWork(qp, ctx.getLog());
    }

    static Behavior<Command> start(ActorContext<Command> ctx, DeviceSession session,
        ProtectionDomain pd, QpSpec spec, ActorRef<Event> owner, QpMaker maker, QpLineage lineage) {
      CqEntry cq = null;
      QueuePair qp = null;
      Incarnation inc;
      try {
        int cqSize = spec.cqSize() > 0 ? spec.cqSize() : session.settings.cqSize;
        cq = session.createCq(cqSize, ctx.getSelf());
        qp = maker.create(pd, QpInitAttributes.of(spec.type(), cq.cq, cq.cq)
            .maxSendWr(spec.maxSendWr()).maxRecvWr(spec.maxRecvWr())
            .maxInlineData(spec.maxInlineData()));
        inc = new Incarnation(ctx, session, spec, owner, maker, qp, cq);
      } catch (RuntimeException e) {
        if (qp != null) {
          try {
            maker.destroy(qp);
          } catch (RuntimeException ignored) {
            // reported below with the first failure
          }
        }
        if (cq != null) session.releaseCq(cq);
        String why = "creating a " + spec.type() + " QP on " + session.name + " failed: "
            + e.getMessage();
        if (lineage.replyTo != null) {
          lineage.replyTo.tell(StatusReply.error(why));
          lineage.replyTo = null;
        } else {
          owner.tell(new Fatal(lineage.lastQpNum, why, false));
        }
        return Behaviors.stopped();
      }
      session.registerQp(inc.qpNum, ctx.getSelf());
      if (lineage.replyTo != null) {
        lineage.replyTo.tell(StatusReply.success(ctx.getSelf()));
        lineage.replyTo = null;
      } else {
        owner.tell(new Restarted(inc.qpNum, lineage.lastQpNum));
      }
      lineage.lastQpNum = inc.qpNum;
      return inc.behavior();
    }

    // -------------------------------------------------------------- one behavior per state

    private Behavior<Command> behavior() {
      switch (state) {
        case RESET: return reset();
        case INIT: return init();
        case RTR: return rtr();
        case RTS: return rts();
        case SQD: return sqd();
        case SQE: return sqe();
        default: return error();
      }
    }

    private Behavior<Command> reset() {
      return common()
          .onMessage(Post.class, p -> reject(p, "a QP in RESET takes no work requests; "
              + "move it to INIT first"))
          .build();
    }

    private Behavior<Command> init() {
      return common()
          .onMessage(Post.class, p -> post(p, false, "sends need RTS; the QP is in INIT"))
          .build();
    }

    private Behavior<Command> rtr() {
      return common()
          .onMessage(Post.class, p -> post(p, false, "sends need RTS; the QP is in RTR"))
          .build();
    }

    private Behavior<Command> rts() {
      return common().onMessage(Post.class, p -> post(p, true, null)).build();
    }

    /** Sends posted while draining wait until the QP is back in RTS. */
    private Behavior<Command> sqd() {
      return common().onMessage(Post.class, p -> post(p, true, null)).build();
    }

    private Behavior<Command> sqe() {
      return common()
          .onMessage(Post.class, p -> post(p, false,
              "the send queue is in error (SQE); move the QP to RTS before sending"))
          .build();
    }

    /** Nothing is posted in ERR: verbs would only flush it, so flush it here. */
    private Behavior<Command> error() {
      return common().onMessage(Post.class, this::flushAtOnce).build();
    }

    private BehaviorBuilder<Command> common() {
      return Behaviors.receive(Command.class)
          .onMessage(Modify.class, this::modify)
          .onMessage(Completions.class, c -> c.cq() != cq ? Behaviors.same()
              : completions(c.batch()))
          .onMessage(AsyncEventArrived.class, e ->
              (e.cq() != null ? e.cq() == cq : e.qpNum() == qpNum)
                  ? asyncEvent(e.type()) : Behaviors.same())
          .onMessage(CqFailed.class, f -> f.cq() != cq ? Behaviors.same()
              : cqFailed("CQ failed: " + f.reason()))
          .onMessage(Sync.class, s -> follow(s.cause()))
          .onMessage(Finish.class, f -> finish(f.cause()))
          .onMessage(ErrorSync.class, this::errorSync)
          .onMessage(Inspect.class, i -> {
            i.replyTo().tell(qp);
            return Behaviors.same();
          })
          .onMessage(GetState.class, g -> {
            g.replyTo().tell(info());
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            destroy("the QP actor stopped");
            return Behaviors.same();
          })
          .onSignal(PreRestart.class, s -> {
            destroy("the QP is being replaced");
            return Behaviors.same();
          });
    }

    private QpInfo info() {
      return new QpInfo(qpNum, spec.type(), state, qp.capabilities().maxSendWr(),
          qp.capabilities().maxRecvWr());
    }

    // -------------------------------------------------------------- transitions

    private Behavior<Command> modify(Modify m) {
      QpState before = state;
      QpAttributes a = m.attributes();
      if (qp.state() != state) enter(qp.state(), "found in " + qp.state());
      QpState to = a.has(QpAttributes.STATE) ? a.state() : state;
      try {
        QpStateMachine.check(qpNum, spec.type(), state, a);
      } catch (IllegalQpTransitionException e) {
        m.replyTo().tell(new TransitionRejected(qpNum, state, to, e.getMessage()));
        return next(before);
      }
      if (cqBroken && to != QpState.ERR && to != QpState.RESET) {
        m.replyTo().tell(new TransitionRejected(qpNum, state, to,
            "the QP's CQ failed; only ERR or RESET are left"));
        return next(before);
      }
      QpState from = state;
      try {
        qp.modify(a);
      } catch (RuntimeException e) {
        if (qp.state() != state) enter(qp.state(), "found in " + qp.state());
        m.replyTo().tell(new TransitionFailed(qpNum, state, to, e.getMessage()));
        return next(before);
      }
      m.replyTo().tell(new Transitioned(qpNum, from, to));
      if (to != state) enter(to, "modify");
      return next(before);
    }

    private Behavior<Command> follow(String cause) {
      QpState before = state;
      QpState now = qp.state();
      if (now != state) enter(now, cause);
      return next(before);
    }

    private Behavior<Command> next(QpState before) {
      return state == before ? Behaviors.same() : behavior();
    }

    /** Moves to {@code to} and reports what the new state does to outstanding work. */
    private void enter(QpState to, String cause) {
      QpState from = state;
      state = to;
      owner.tell(new StateChanged(qpNum, from, to, cause));
      switch (to) {
        case RESET:
          // RESET drops the queues without completions: the buffers are free now
          posted.reportFlushed();
          posted.releaseAll();
          break;
        default:
          break;
      }
    }

    // -------------------------------------------------------------- events

    private Behavior<Command> asyncEvent(AsyncEventType type) {
      QpState before = state;
      owner.tell(new AsyncEventReceived(qpNum, type));
      switch (type) {
        case CQ_ERR:
          return cqFailed("CQ_ERR: the CQ overran");
        case QP_FATAL:
          follow("QP_FATAL");
          fatal("QP_FATAL");
          return next(before);
        default:
          return follow(type.toString());
      }
    }

    private Behavior<Command> cqFailed(String reason) {
      QpState before = state;
      if (cqBroken) return Behaviors.same();
      cqBroken = true;
      if (state != QpState.ERR && state != QpState.RESET) {
        try {
          qp.modify(new QpAttributes().state(QpState.ERR));
        } catch (RuntimeException e) {
          ctx.getLog().warn("QP {}: moving to ERR after a CQ failure failed: {}", qpNum,
              e.getMessage());
        }
      }
      if (qp.state() != state) enter(qp.state(), reason);
      posted.reportFlushed();
      // no completion will come through a failed CQ; in ERR the QP touches no buffer
      posted.releaseAll();
      fatal(reason);
      return next(before);
    }

    private void fatal(String reason) {
      owner.tell(new Fatal(qpNum, reason, spec.restartOnFatal()));
      if (spec.restartOnFatal()) throw new QpFatalException("QP " + qpNum + ": " + reason);
    }

    // -------------------------------------------------------------- posting

    private Behavior<Command> reject(Post p, String why) {
      p.replyTo().tell(new PostRejected(qpNum, state, ids(p.work()), why));
      return Behaviors.same();
    }

    private Behavior<Command> flushAtOnce(Post p) {
      String invalid = PostedWork.validate(p.work());
      if (invalid != null) return reject(p, invalid);
      List<Completion> flushed = new ArrayList<>();
      for (Work w : p.work()) {
        w.buffer().release();
        flushed.add(new Completion(w.id(), WcStatus.WR_FLUSH_ERR, PostedWork.opcodeOf(w), 0,
            null, null));
      }
      p.replyTo().tell(new Completed(qpNum, flushed));
      return Behaviors.same();
    }

    private Behavior<Command> post(Post p, boolean sendsAllowed, String whyNoSends) {
      List<Work> work = p.work();
      String invalid = PostedWork.validate(work);
      if (invalid != null) return reject(p, invalid);
      int sends = 0;
      int recvs = 0;
      for (Work w : work) {
        if (w instanceof Receive) recvs++; else sends++;
      }
      if (sends > 0 && !sendsAllowed) return reject(p, whyNoSends);
      if (sends > 0 && spec.type() == QpType.UD) {
        return reject(p, "UD sends need an address handle, which this actor does not post");
      }
      if (cqBroken) return reject(p, "the QP's CQ failed");
      String full = posted.noRoomFor(sends, recvs);
      if (full != null) return reject(p, full);
      QpState before = state;
      if (recvs > 0 && !posted.postRecvs(work, p.replyTo())) followAfterFailedPost();
      if (sends > 0 && !posted.postSends(work, p.replyTo())) followAfterFailedPost();
      return next(before);
    }

    // -------------------------------------------------------------- completions

    private Behavior<Command> completions(CompletionBatch b) {
      QpState before = state;
      WcStatus firstError = posted.completed(b);
      if (firstError != null) errorSync(new ErrorSync(firstError, 0));
      return next(before);
    }

    /**
     * An error completion moves the QP (RC to ERR, UC and UD to SQE), but the completion can be
     * polled before the QP's state reads as moved: look again shortly, a bounded number of times.
     */
    private Behavior<Command> errorSync(ErrorSync e) {
      QpState before = state;
      QpState now = qp.state();
      if (now != state) {
        String why = qp.errorCause().orElse(null);
        enter(now, "a completion with " + e.status() + (why != null ? ": " + why : ""));
        // the native provider has no cause beyond the status: the status is the reason then;
        // a flush is no cause of its own (a disconnect or an earlier error moved the QP)
        if (now == QpState.ERR && (why != null || e.status() != WcStatus.WR_FLUSH_ERR)) {
          owner.tell(new Failed(qpNum, e.status(), why != null ? why
              : "a work request completed with " + e.status().description));
        }
      } else if (e.tries() < ERROR_SYNC_TRIES && state != QpState.ERR && state != QpState.RESET) {
        ctx.scheduleOnce(ERROR_SYNC_PAUSE, ctx.getSelf(),
            new ErrorSync(e.status(), e.tries() + 1));
      }
      return next(before);
    }

    private void followAfterFailedPost() {
      if (qp.state() != state) enter(qp.state(), "post failed");
    }

    private static List<Long> ids(List<Work> work) {
      List<Long> ids = new ArrayList<>(work.size());
      for (Work w : work) ids.add(w == null ? -1L : w.id());
      return ids;
    }

    // -------------------------------------------------------------- the end

    private Behavior<Command> finish(String cause) {
      follow(cause);
      if (state != QpState.ERR && state != QpState.RESET && !cqBroken) {
        try {
          qp.modify(new QpAttributes().state(QpState.ERR));
          enter(QpState.ERR, cause);
        } catch (RuntimeException e) {
          ctx.getLog().warn("QP {}: moving to ERR at the connection's end failed: {}", qpNum,
              e.getMessage());
        }
      }
      return finishing();
    }

    /** Until each request has its completion: none comes in RESET or through a failed CQ. */
    private Behavior<Command> finishing() {
      if (posted.allReported() || state == QpState.RESET || cqBroken) return Behaviors.stopped();
      return Behaviors.receive(Command.class)
          .onMessage(Completions.class, c -> {
            if (c.cq() == cq) posted.completed(c.batch());
            return finishing();
          })
          .onMessage(CqFailed.class, f -> {
            if (f.cq() == cq) cqFailed("CQ failed: " + f.reason());
            return finishing();
          })
          .onMessage(Post.class, this::flushAtOnce)
          .onMessage(GetState.class, g -> {
            g.replyTo().tell(info());
            return Behaviors.same();
          })
          .onAnyMessage(m -> Behaviors.same()) // the QP is on its way out: nothing else to do
          .onSignal(PostStop.class, s -> {
            destroy("the connection ended");
            return Behaviors.same();
          })
          .build();
    }

    /** Destroys the QP first, so that nothing touches the buffers, then gives them back. */
    private void destroy(String why) {
      if (destroyed) return;
      destroyed = true;
      session.unregisterQp(qpNum);
      try {
        maker.destroy(qp);
      } catch (RuntimeException e) {
        ctx.getLog().error("QP {}: destroying it failed: {}", qpNum, e.getMessage());
      }
      posted.close();
      session.releaseCq(cq);
      ctx.getLog().debug("QP {} destroyed: {}", qpNum, why);
    }
  }
}
