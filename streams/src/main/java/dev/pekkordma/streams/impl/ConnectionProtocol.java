package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.RegisteredMemoryExhaustedException;
import dev.pekkordma.streams.BulkChunk;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.TransferResult;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;
import java.util.function.Function;
import java.util.function.IntSupplier;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection's protocol ({@link Wire}) as a state machine: events in (an element offered,
 * demand, our upstream's end, our downstream's cancel, an abort, a work completion, the peer's
 * going, a timer), {@link Actions} out (pull, push, complete our downstream, cancel our upstream
 * with a cause or without, a timer, close, end, fail). It knows no stage: {@code ConnectionLogic}
 * connects it to one, and the tests drive it alone. It owns the credits, the ring and its
 * replacement (RING and RING_ACK), the send buffers, batching, the close and the checks of
 * everything the peer sends, through its parts: {@link Sender}, {@link Receiver}, {@link
 * ElementWriter}, {@link ProtocolValidator}, {@link RingSizing}.
 *
 * <p>The four ends of a connection end independently, by Tcp's rules. Our writing side ends when
 * our upstream completes (a FIN follows our last write) or when we cancel it; our reading side
 * when the peer's FIN has been taken (a FIN_ACK answers it) or our downstream cancels (a CANCEL
 * tells the peer how many of its writes our application took). Without half-close either end
 * closes both, as Tcp's {@code Close}: our upstream's end completes our downstream (after what it
 * asked for already), and our downstream's cancel cancels our upstream (after the element in
 * hand). Where Tcp lets a write vanish (the peer stopped reading) or resets the connection for
 * it, RDMA is louder and no more: such a write fails our upstream naming why ({@link
 * Actions#cancelUpstream} with a cause), and our reading goes on to the peer's end. An abort
 * (our upstream failed, our downstream failed, the idle timeout) fails every end, as Tcp's
 * reset. The RDMA connection goes once both directions are done: ours acknowledged (FIN_ACK) or
 * refused (CANCEL), theirs answered (FIN_ACK) or refused by us (CANCEL), nothing in flight.
 *
 * <p>One per connection, used on the stage's thread. The data path allocates nothing but the
 * ByteStrings it hands downstream.
 */
final class ConnectionProtocol {
  private static final Logger log = LoggerFactory.getLogger(ConnectionProtocol.class);
  static final Duration FLUSH_GRACE = Duration.ofMillis(300);
  private static final String OVERRUN = "the peer wrote more messages than it had credits";

  /** What the machine does outside itself. */
  interface Actions {
    /** Asks our upstream for its next element. */
    void pull();

    /** One element to our downstream, which asked for it. */
    void push(Object element);

    void completeDownstream();

    /** Cancels our upstream: {@code cause} null as Tcp's close does, else why a write failed. */
    void cancelUpstream(Throwable cause);

    /** Calls {@link #burstOver} once the events ready now have been handled. */
    void burstBegan();

    void schedule(Timer timer, Duration after, boolean repeat);

    void cancel(Timer timer);

    /** After a try to send: {@code stalled}, an element waits for the peer to free a slot. */
    void sendTried(boolean stalled);

    /** The RDMA connection is over: free its resources (the stage may wait for its upstream). */
    void close();

    /**
     * The connection ended: the stage completes; {@code writeFailure}, if not null, is why a write
     * of ours never reached the peer's application.
     */
    void end(TransferResult moved, RuntimeException writeFailure);

    /** The connection failed as a whole: every end fails with {@code cause}. */
    void fail(Throwable cause);
  }

  /** The timers the machine asks for. */
  enum Timer { RESIZE, FLUSHED }

  /** What the connection's resources give the machine. */
  interface ProtocolResources {
    QueuePair qp();

    SendRequests sendRequests();

    SendBuffers sendBuffers();

    /** Where inline writes are put together. */
    OffHeapBuffer scratch();

    int inlineMax();

    /** The ring the connection starts with. */
    ConnectionResources.RegisteredRing ring();

    /** A new ring of ours; the budget may refuse it. */
    ConnectionResources.RegisteredRing openRing(int count, int size);

    /** A ring replaced and all its writes taken. */
    void closeRing(Receiver.Slots ring);

    /** What our rings say of us ({@link Wire#TAKES_BATCHES}, or 0). */
    int ringFlags();

    void postReceives(int count);
  }

  /** Whether the peer takes what we write. */
  private enum PeerReading { READING, TOOK_ALL, STOPPED }

  /** The peer's data coming to us: its FIN, taken by our application, answered. */
  private enum PeerWriting { OPEN, FIN_ARRIVED, FIN_TAKEN, FIN_ACKED }

  /** Our telling the peer that we stopped reading. */
  private enum Cancel { NONE, DUE, SENT }

  private enum LinkState { CONNECTING, UP, GONE }

  private final ConnectionPlan plan;
  private final RdmaStreamSettings settings;
  private final Closing closing;
  private final boolean active; // we connected: our end of data before the link is up half-closes
  private final Function<String, RuntimeException> failure; // a reason, naming the peer
  private final Actions actions;
  private final ProtocolValidator rules;
  private final RingSizing sizing; // null: our ring stays as it is
  private ProtocolResources res;
  private Sender sender;
  private Receiver receiver;
  private ElementWriter writer;
  private final IntSupplier credits = this::takeCredits;

  // the four ends
  private boolean writing = true; // our upstream may give more
  private boolean reading = true; // our downstream takes more
  private PeerReading peerReading = PeerReading.READING;
  private PeerWriting peerWriting = PeerWriting.OPEN;
  private Cancel cancel = Cancel.NONE;
  private long takenAtCancel;
  private boolean finSent;
  // without half-close, our reading's end ends our writing: once the events ready then are
  // handled (an element our upstream pushed meanwhile is written), then now
  private boolean closeWritingSoon;
  private boolean closeWriting;
  private RuntimeException writeFailure;
  private LinkState link = LinkState.CONNECTING;
  private boolean stopped; // ended or failed: nothing more happens

  private boolean pulled;
  private boolean demanded;
  private boolean withDownstream; // an element pushed, and no demand since: not yet taken
  private boolean burstEndDue;
  private boolean ticking; // the resize timer runs
  private String flushReason;

  ConnectionProtocol(ConnectionPlan plan, Closing closing, boolean active,
      Function<String, RuntimeException> failure, Actions actions) {
    this.plan = plan;
    this.settings = plan.settings();
    this.closing = closing;
    this.active = active;
    this.failure = failure;
    this.actions = actions;
    this.sizing = plan.sizing();
    this.rules = new ProtocolValidator(plan.first().count(), plan.first().size(),
        plan.framing() == Framing.MESSAGES ? settings.maxMessageSize() : Long.MAX_VALUE,
        settings.path() + ".max-message-size");
    if (plan.takesBatches()) rules.takeBatches();
  }

  // ------------------------------------------------------------ set-up

  /**
   * The connection's resources are open: from now on completions may come. {@code lent}: the
   * ring is lent in place (the buffer source), else null; {@code receivesPosted}: the binding
   * posted them when it accepted.
   */
  void open(ProtocolResources resources, LeasedRing lent, boolean receivesPosted) {
    res = resources;
    SendBuffers buffers = res.sendBuffers();
    sender = new Sender(res.qp(), res.sendRequests(), plan.sqDepth(), settings.signalEvery(),
        buffers);
    writer = new ElementWriter(sender, res.inlineMax(), res.scratch(), plan.slotSize(), buffers,
        plan.coalesce());
    receiver = new Receiver(res.ring().slots(), plan.rqDepth(),
        plan.framing() == Framing.MESSAGES,
        res::closeRing);
    receiver.maxMessage(settings.maxMessageSize(), settings.path() + ".max-message-size");
    if (lent != null) receiver.lend(lent);
    if (!reading) receiver.discarding = true;
    if (receivesPosted) {
      receiver.takeReceivesToPost();
    } else {
      repost();
    }
  }

  /** The peer's first ring, as its private data described it ({@link Wire.Ring#decode}). */
  void peerRing(Wire.Ring ring) {
    rules.peerRing(ring);
    sender.peerRing(ring);
  }

  /** The connection is up: data may go. */
  void established() {
    if (stopped) return;
    link = LinkState.UP;
    // without half-close, an end of data before the connection was up closes the connection
    // once it is (Tcp's does not: it half-closes an outgoing one)
    if (!writing && closing == Closing.FULL && !active) closeReading();
    if (!stopped && writing) pull();
    progress();
  }

  /** What moved so far, each way. */
  Traffic sent() {
    return writer.sent;
  }

  Traffic received() {
    return receiver.received;
  }

  /** Its sending bookkeeping (for the tests' invariants). */
  Sender sender() {
    return sender;
  }

  /** Its receiving bookkeeping (for the tests' invariants). */
  Receiver receiver() {
    return receiver;
  }

  /** Whether the RDMA connection is gone or the machine stopped: no more completions. */
  boolean over() {
    return stopped || link == LinkState.GONE;
  }

  // ------------------------------------------------------------ the stage's events

  /** Our upstream's element, which we pulled. */
  void offered(Object element) {
    pulled = false;
    if (stopped) return;
    if (link == LinkState.GONE || peerReading == PeerReading.STOPPED) {
      String gone = peerReading == PeerReading.STOPPED ? "the peer stopped reading"
          : "the peer closed the connection";
      writeFailed(gone + ": a further " + ElementWriter.describe(element)
          + " cannot be delivered");
      endIfDone();
      return;
    }
    if (element instanceof ByteString bs) {
      String oversize = writer.oversize(bs.length(), settings);
      if (oversize != null) {
        fail(oversize);
        return;
      }
    } else if (!(element instanceof BulkChunk)) {
      failWith(new IllegalArgumentException("an RDMA connection takes ByteString or BulkChunk,"
          + " got " + (element == null ? "null" : element.getClass().getName())));
      return;
    }
    writer.take(element);
    progress();
  }

  /** Our downstream asks for an element. */
  void demanded() {
    demanded = true;
    withDownstream = false;
    progress();
  }

  /** Our upstream completed: our FIN follows our last write. */
  void upstreamFinished() {
    if (stopped || !writing) return;
    writing = false;
    closeWriting = closeWritingSoon = false;
    if (link == LinkState.GONE) {
      endIfDone();
      return;
    }
    // Tcp's close without half-close, or once our reading has ended: we read no more
    if (link == LinkState.UP && closing == Closing.FULL) closeReading();
    progress();
  }

  /** Our downstream cancelled without a failure: the peer hears that we stopped reading. */
  void downstreamCancelled() {
    if (stopped || !reading) return;
    reading = false;
    stopReading();
    // Tcp's close without half-close: our writing ends too, after what our upstream gave
    if (writing && closing == Closing.FULL) {
      closeWritingSoon = true;
      burstBegan();
    }
    progress();
  }

  /** The stage failed for a reason of its own: nothing more happens here. */
  void stop() {
    stopped = true;
  }

  /** Our upstream failed, our downstream failed, or the idle timeout: Tcp's abort. */
  void aborted(Throwable cause) {
    if (!stopped) failWith(cause);
  }

  /** The end of a burst of events that {@link Actions#burstBegan} announced. */
  void burstOver() {
    burstEndDue = false;
    if (stopped) return;
    if (writer != null) writer.burstOver();
    if (closeWritingSoon) {
      closeWritingSoon = false;
      closeWriting = writing;
    }
    progress();
  }

  /** The application released lent buffers. */
  void released() {
    if (over()) return;
    receiver.woken();
    progress();
  }

  void timer(Timer timer) {
    if (timer == Timer.RESIZE) {
      resize(true);
    } else {
      peerGone(flushReason);
    }
  }

  // ------------------------------------------------------------ the connection's events

  /**
   * The work completion at {@code i} in {@code wcs}: a receive ({@link
   * ConnectionResources#RECV_WR_ID}) or a send.
   */
  void completed(WorkCompletions wcs, int i) {
    if (over()) return;
    long wrId = wcs.wrId(i);
    int status = wcs.statusCode(i);
    if (wrId == ConnectionResources.RECV_WR_ID) {
      received(wcs, i, status);
    } else {
      sender.completed(wrId);
      if (status != 0) broken(status, "a send");
    }
  }

  /** The completions polled are all handed in: receives go again, and whatever is due. */
  void polled() {
    if (over()) return;
    repost();
    progress();
  }

  /**
   * The peer disconnected ({@code reason}), every completion before it handed in. After our
   * answers to its end, that is how a connection ends; before, the peer vanished or aborted.
   */
  void peerDisconnected(String reason) {
    peerGone(reason);
  }

  // ------------------------------------------------------------ receiving

  /** A message from the peer: checked, then acted on. */
  private void received(WorkCompletions wcs, int i, int status) {
    receiver.received();
    if (status != 0) { // what else it says is undefined
      broken(status, "a receive");
      return;
    }
    int imm = wcs.immediate(i);
    int byteLength = wcs.byteLength(i);
    String wrong = rules.receive(wcs.opcode(i), wcs.hasImmediate(i), byteLength, imm,
        sender.writes());
    if (wrong != null) {
      fail("protocol error: " + wrong);
      return;
    }
    int kind = Wire.kind(imm);
    int code = kind == Wire.CONTROL ? Wire.code(imm) : -1;
    if (code == Wire.CANCEL) { // its field is a count of our writes, not credits
      peerStoppedReading(Wire.credits(imm));
      return;
    }
    sender.credited(Wire.credits(imm));
    String bad = switch (code) {
      case Wire.FIN -> {
        peerWriting = PeerWriting.FIN_ARRIVED;
        yield receiver.finArrived() ? null : OVERRUN;
      }
      case Wire.FIN_ACK -> {
        peerReading = PeerReading.TOOK_ALL;
        yield null;
      }
      case Wire.RING_ACK -> {
        receiver.peerAcked();
        yield null;
      }
      case Wire.RING -> peerReplacesRing();
      case Wire.CREDIT -> null;
      default -> dataArrived(kind, byteLength);
    };
    if (bad != null) fail("protocol error: " + bad);
  }

  /** A data write of {@code kind} and {@code length} bytes landed in our ring. */
  private String dataArrived(int kind, int length) {
    boolean more = kind == Wire.MORE;
    byte as = more ? ArrivedWrites.MORE
        : kind == Wire.BATCH ? ArrivedWrites.BATCH : ArrivedWrites.END;
    if (receiver.arrived(length, as) < 0) return OVERRUN;
    if (sizing != null) {
      Receiver.Slots w = receiver.writerRing();
      sizing.arrived(length, more, w.count(), w.size(), receiver.arrivals.size());
    }
    return null;
  }

  /**
   * The peer's RING landed in our next slot: our writes go to the ring it describes once our
   * RING_ACK is posted. Null, or what is wrong with it.
   */
  private String peerReplacesRing() {
    long at = receiver.arrived(Wire.Ring.LENGTH, ArrivedWrites.SKIP);
    if (at < 0) return OVERRUN;
    byte[] b = new byte[Wire.Ring.LENGTH];
    NativeMemory.copyToArray(at, b, 0, b.length);
    try {
      sender.peerReplacesRing(Wire.Ring.decode(b));
      return null;
    } catch (IllegalArgumentException e) {
      return "its RING: " + e.getMessage();
    }
  }

  /**
   * The peer's CANCEL: its application stopped reading, having taken {@code taken} of our writes
   * (modulo 2^24). Data writes beyond them were dropped, and so is the element in hand: our
   * writing fails, and nothing more can reach the peer (an element more fails too). A RING of
   * ours still on its way when the peer stopped carried no element: it is no loss.
   */
  private void peerStoppedReading(int taken) {
    peerReading = PeerReading.STOPPED;
    // signed: RINGs the peer took after our last data write put it ahead
    long dropped = Math.max(0, ((sender.writesThroughData() - taken) << 40) >> 40);
    boolean busy = writer.busy();
    if (dropped == 0 && !busy) return;
    writer.abandon();
    writeFailed("the peer stopped reading with " + dropped + " of our writes not taken"
        + (busy ? " and an element still to send" : ""));
  }

  /** Gives downstream what it asked for, freeing each slot as its message is taken. */
  private void deliver() {
    receiver.reclaim(); // released since: no need to wait
    ArrivedWrites arrivals = receiver.arrivals;
    while (arrivals.size() > 0) {
      // what goes downstream waits for demand; the peer's end does not (a completion needs no
      // demand, as Tcp's does not), nor does its RING, which carries nothing for downstream (a
      // CANCEL after it does not count it lost)
      byte next = arrivals.nextKind();
      if (reading && !demanded && next != ArrivedWrites.FIN && next != ArrivedWrites.SKIP) return;
      if (next == ArrivedWrites.FIN) {
        // the last element first reaches our downstream's handler (its next demand says so):
        // the FIN_ACK tells the peer that its every byte was taken
        if (reading && withDownstream) return;
        arrivals.pop();
        peerWriting = PeerWriting.FIN_TAKEN;
        if (reading) {
          reading = false;
          actions.completeDownstream();
        }
        return;
      }
      Object element;
      try {
        element = receiver.take();
      } catch (IllegalStateException e) {
        fail(e.getMessage());
        return;
      }
      if (element != null) {
        demanded = false;
        withDownstream = true;
        actions.push(element);
      }
    }
  }

  /**
   * Our reading ended before the peer's: what comes is dropped, its slots freed, and unless the
   * peer's end is here already (its FIN the one arrival left, nothing half put together) the
   * peer hears a CANCEL with how many of its writes our application took whole.
   */
  private void stopReading() {
    if (receiver != null) receiver.discarding = true;
    rules.stoppedReading();
    if (cancel != Cancel.NONE || peerWriting == PeerWriting.FIN_ACKED) return;
    if (receiver != null && peerWriting != PeerWriting.OPEN && receiver.arrivals.size() <= 1
        && !receiver.partial()) {
      return;
    }
    cancel = Cancel.DUE;
    takenAtCancel = receiver == null ? 0 : receiver.takenWhole();
  }

  /** Tcp's close: our downstream completes, after what it asked for already. */
  private void closeReading() {
    if (!reading) return;
    deliver();
    if (stopped || !reading) return;
    reading = false;
    actions.completeDownstream();
    stopReading();
  }

  private void repost() {
    if (link == LinkState.GONE || flushReason != null) return;
    int n = receiver.takeReceivesToPost();
    if (n == 0) return;
    try {
      res.postReceives(n);
    } catch (RuntimeException e) {
      fail("posting receives failed: " + e.getMessage());
    }
  }

  // ------------------------------------------------------------ sending

  /** Writes as much of the element in hand as credits, buffers and the send queue allow. */
  private void trySend() {
    boolean finished; // the element in hand is all written (or gathered)
    try {
      finished = writer.writeSome(credits);
      actions.sendTried(writer.busy() && sender.credits() == 0);
      // what gathers behind a burst's first goes once the events ready now are handled
      if (writer.burstBegan()) burstBegan();
      writer.flushIfDue(credits, !writing);
    } catch (Sender.PostFailed e) {
      fail(e.getMessage());
      return;
    } catch (RuntimeException e) {
      failWith(e);
      return;
    }
    if (!writing) return;
    if (closeWriting) {
      if (writer.holding()) return;
      writing = false;
      closeWriting = false;
      actions.cancelUpstream(null);
    } else if (finished && !closeWritingSoon) {
      pull();
    }
  }

  /** Asks for {@link #burstOver} once the events ready now are handled. */
  private void burstBegan() {
    if (burstEndDue) return;
    burstEndDue = true;
    actions.burstBegan();
  }

  private void pull() {
    if (pulled) return;
    pulled = true;
    actions.pull();
  }

  /**
   * A write of ours can never reach the peer's application: our upstream fails with why (if it
   * has not ended), and the connection's end reports it. Our reading goes on to the peer's end,
   * with half-close or without (where Tcp's write vanishes, its reading goes on too).
   */
  private void writeFailed(String reason) {
    RuntimeException cause = failure.apply(reason);
    log.debug("{}", cause.getMessage());
    if (writeFailure == null) writeFailure = cause;
    if (!writing) return;
    writing = false;
    closeWriting = closeWritingSoon = false;
    actions.cancelUpstream(cause);
  }

  /** The credits owed, for the next message to carry: the peer may write that many more. */
  private int takeCredits() {
    int c = receiver.takeCredits();
    rules.sentCredits(c);
    return c;
  }

  /**
   * Control messages, when due and the send queue has room: the RING_ACK of the peer's new ring
   * (before any write into it), then CANCEL, FIN_ACK, FIN and credits.
   */
  private void sendControl() {
    try {
      if (sender.ringAckDue() && sender.mayControl()) {
        post(Wire.RING_ACK, takeCredits());
        sender.ringAcknowledged();
        rules.acknowledgedPeerRing(sender.writes());
      }
      if (cancel == Cancel.DUE && sender.mayControl()) {
        post(Wire.CANCEL, (int) (takenAtCancel & Wire.CREDIT_MASK));
        cancel = Cancel.SENT;
      }
      // a lent ring's buffers count as taken once released
      LeasedRing lent = receiver.lent();
      if (peerWriting == PeerWriting.FIN_TAKEN && (lent == null || lent.allReturned())
          && sender.mayControl()) {
        post(Wire.FIN_ACK, takeCredits());
        peerWriting = PeerWriting.FIN_ACKED;
      }
      // our end of data, always (to a peer that stopped reading too, after an element it made
      // us drop half written): a connection left without it is an abort
      if (!writing && !writer.busy() && !finSent && sender.mayControl()) {
        post(Wire.FIN, takeCredits());
        rules.sentFin();
        finSent = true;
      }
      if (receiver.creditsOwed() >= receiver.creditThreshold()
          && peerWriting != PeerWriting.FIN_ACKED && cancel != Cancel.SENT
          && sender.mayControl()) {
        post(Wire.CREDIT, takeCredits());
      }
    } catch (Sender.PostFailed e) {
      fail(e.getMessage());
    }
  }

  private void post(int code, int field) {
    sender.control(Wire.control(code, field));
  }

  // ------------------------------------------------------------ rings

  /**
   * Our ring and send buffers follow the traffic ({@code tick}: the resize timer), which ticks
   * only while something is large: ten thousand idle connections cost no timer.
   */
  private void resize(boolean tick) {
    if (over() || link != LinkState.UP || sizing == null) return;
    maybeAnnounce(tick, reading && peerWriting == PeerWriting.OPEN);
    SendBuffers buffers = res.sendBuffers();
    buffers.resize(tick);
    // writes left unsignalled would hold the large area's buffers for good
    if (tick && buffers.retiring()) {
      try {
        sender.flushUnsignaled();
      } catch (Sender.PostFailed e) {
        fail(e.getMessage());
        return;
      }
    }
    boolean large = sizing.atLarge() || buffers.large();
    if (large == ticking) return;
    ticking = large;
    if (ticking) {
      actions.schedule(Timer.RESIZE, sizing.shrinkAfter(), true);
    } else {
      actions.cancel(Timer.RESIZE);
    }
  }

  /**
   * Announces a new ring of ours when one is due, a write can carry the RING now, and no
   * replacement is under way; a larger one only while {@code readingOn} (more data may come, and
   * downstream wants it).
   */
  private void maybeAnnounce(boolean tick, boolean readingOn) {
    RingSizing.Plan p = sizing.due(tick, receiver.taken());
    if (p == null || (p.large() && !readingOn) || receiver.replacing() || !sender.mayWrite()) {
      return;
    }
    ConnectionResources.RegisteredRing next;
    try {
      next = res.openRing(p.count(), p.size());
    } catch (RegisteredMemoryExhaustedException e) {
      log.debug("the receive ring stays as it is: {}", e.getMessage());
      sizing.refused(p);
      return;
    }
    Wire.Ring d = next.describe(res.ringFlags());
    boolean written;
    try {
      written = writer.writeRing(d.encode(), Wire.control(Wire.RING, 0));
    } catch (Sender.PostFailed e) {
      res.closeRing(next.slots());
      fail(e.getMessage());
      return;
    }
    if (!written) {
      res.closeRing(next.slots());
      return;
    }
    rules.announced(d);
    receiver.announce(next.slots());
    sizing.announced(p);
  }

  // ------------------------------------------------------------ the end

  /** After anything happened: deliver, send, say what is due, and see if we are done. */
  private void progress() {
    if (stopped || link != LinkState.UP) return;
    deliver();
    if (stopped) return;
    resize(false);
    if (stopped) return;
    trySend();
    if (stopped) return;
    sendControl();
    if (stopped) return;
    if (!sendingDone() || !receivingDone()) return;
    if (sender.outstanding() == 0) {
      link = LinkState.GONE;
      end();
      return;
    }
    try { // writes left unsignalled (no FIN after them) complete only when asked
      sender.flushUnsignaled();
    } catch (Sender.PostFailed e) {
      fail(e.getMessage());
    }
  }

  /** Nothing more of ours is to be written, and the peer took it all or refused it. */
  private boolean sendingDone() {
    return !writing && !writer.busy()
        && (peerReading == PeerReading.TOOK_ALL || peerReading == PeerReading.STOPPED);
  }

  /** The peer's end is answered, or we said we stopped reading. */
  private boolean receivingDone() {
    return peerWriting == PeerWriting.FIN_ACKED || cancel == Cancel.SENT;
  }

  /**
   * A send or receive failed ({@code status}). A flush (the QP went to the error state), or
   * any failure after the peer stopped reading, is most likely the peer going: the CM's
   * DISCONNECTED usually says why, shortly, else the timer does.
   */
  private void broken(int status, String what) {
    WcStatus s = WcStatus.of(status);
    String cause = res.qp().errorCause().orElse(null);
    if (s != WcStatus.WR_FLUSH_ERR && peerReading != PeerReading.STOPPED) {
      fail(CompletionFailure.describe(what, s, cause));
    } else if (flushReason == null) {
      flushReason = CompletionFailure.flushed(what, s, cause);
      actions.schedule(Timer.FLUSHED, FLUSH_GRACE, false);
    }
  }

  /**
   * The peer is gone. Gracefully if it had ended its writing (its FIN came) and took all we sent
   * or refused it: our upstream, if still open, then decides the end (an element fails, nothing
   * reaches the peer any more; its end ends the connection). Else the peer vanished or aborted,
   * as Tcp's reset: every end fails.
   */
  private void peerGone(String reason) {
    if (over()) return;
    if (peerWriting == PeerWriting.OPEN) {
      fail(reason + " without closing the stream");
      return;
    }
    if (peerReading == PeerReading.READING) {
      fail("the peer closed the connection before acknowledging our last messages");
      return;
    }
    link = LinkState.GONE;
    actions.close();
    endIfDone();
  }

  /** With the link gone, the connection ends once our upstream has. */
  private void endIfDone() {
    if (link == LinkState.GONE && !writing) end();
  }

  private void end() {
    if (stopped) return;
    stopped = true;
    actions.close();
    actions.end(new TransferResult(writer.sent.bytes(), writer.sent.messages(),
        receiver.received.bytes(), receiver.received.messages()), writeFailure);
  }

  /** The whole connection fails, for {@code reason} naming the peer. */
  private void fail(String reason) {
    failWith(failure.apply(reason));
  }

  private void failWith(Throwable cause) {
    if (stopped) return;
    stopped = true;
    actions.fail(cause);
  }

  @Override
  public String toString() {
    return "writing=" + writing + " reading=" + reading + " peerReading=" + peerReading
        + " peerWriting=" + peerWriting + " cancel=" + cancel + " finSent=" + finSent
        + " link=" + link + (receiver == null ? "" : " arrivals=" + receiver.arrivals.size())
        + (sender == null ? "" : " sq=" + sender.outstanding());
  }
}
