package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.runtime.internal.AcceptAttempt;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.ConnectAttempt;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * A connection request that a binding accepts as it arrives, as a kernel accepts a TCP
 * connection before the application takes it: the client's connection is up from then on. The
 * QP and ring are set up, the receives posted and the accept sent; until a connection stage
 * adopts it ({@link #claim}, {@link #attach}), the id's CM events and the CQ's wake-ups wait
 * here, and what the client writes waits in the ring, within the credits the ring gave it.
 * Whoever claims it first owns it: a stage, or the timeout that closes it ({@link #abandon}).
 * Its handshake is an {@link AcceptAttempt} whose decision is made at once: the client must then
 * confirm within {@code connect-timeout}, or the connection fails (its stage hears why).
 */
final class EarlyAccept {
  final CmId id;
  final InetSocketAddress remote;
  private final AtomicBoolean claimed = new AtomicBoolean();
  private final AtomicInteger unclaimed; // the binding's count of those nobody took yet
  private final StreamsRuntime rt;
  // set by accept before anyone else sees them
  private ConnectionResources res;
  private Wire.Ring peerRing;
  private AcceptAttempt attempt;
  private org.apache.pekko.actor.Cancellable deadline;
  /** Why accepting failed, before or after the accept went out (null while it has not). */
  private ConnectAttempt.Failure failure;
  // what came before a stage attached, and where it goes once one has
  private final ArrayDeque<CmEvent> held = new ArrayDeque<>();
  private RuntimeException readerStopped;
  private boolean woken;
  private boolean established;
  private Consumer<CmEvent> events;
  private Consumer<RuntimeException> stopped;
  private Consumer<ConnectAttempt.Failure> failed;
  private Runnable wake;

  private EarlyAccept(StreamsRuntime rt, CmId id, AtomicInteger unclaimed) {
    this.rt = rt;
    this.id = id;
    this.remote = id.remoteAddress();
    this.unclaimed = unclaimed;
  }

  /** Accepts {@code request} for a stage that is there already. */
  static EarlyAccept accept(StreamsRuntime rt, CmEvent request, ConnectionPlan plan) {
    return accept(rt, request, plan, new AtomicInteger());
  }

  /**
   * Accepts {@code request} with the connection {@code plan} describes. A request that cannot be
   * accepted (the client's ring is not one, the memory budget is spent, the device refuses) is
   * rejected, with nothing kept; the failure waits for the stage that adopts it to report.
   */
  static EarlyAccept accept(StreamsRuntime rt, CmEvent request, ConnectionPlan plan,
      AtomicInteger unclaimed) {
    EarlyAccept early = new EarlyAccept(rt, request.id(), unclaimed);
    String peer = SocketAddresses.format(early.remote);
    try {
      early.peerRing = Wire.Ring.decode(request.privateData());
      early.res = plan.resources(rt, early.id);
      // its events only wait here or go on to a stage's callback: they need no thread hand-off
      rt.cm().own(early.id, CmDispatcher.Delivery.IMMEDIATE, early::event, early::readerStopped);
      early.res.open(early::wake, peer);
      early.res.postReceives(plan.rqDepth());
      early.res.cq.requestNotify(false);
    } catch (RuntimeException e) {
      early.failure = new ConnectAttempt.Failure(e.getMessage(), null, e);
      if (early.res != null) {
        early.res.close(ConnectionResources.Farewell.REJECT, peer);
      } else {
        rt.cm().destroy(early.id, true);
      }
      unclaimed.incrementAndGet();
      return early;
    }
    synchronized (early) {
      String path = plan.settings().path();
      early.attempt = new AcceptAttempt(plan.settings().acceptTimeout(), path + ".accept-timeout",
          plan.settings().connectTimeout(), path + ".connect-timeout", early.new EarlySteps());
      early.attempt.accept(); // the binding takes every request, as a kernel does
    }
    unclaimed.incrementAndGet();
    return early;
  }

  /** What the handshake asks for: the accept, the deadline, and telling its stage. */
  private final class EarlySteps implements AcceptAttempt.AcceptSteps {
    @Override
    public void deadlineIn(Duration after) {
      cancelDeadline();
      deadline = rt.system.scheduler().scheduleOnce(after, EarlyAccept.this::deadlinePassed,
          rt.system.executionContext());
    }

    @Override
    public void accept() {
      id.accept(ConnectionParameters.withPrivateData(res.ring.describe(res.ringFlags).encode()));
    }

    @Override
    public void reject(byte[] privateData, String why) {
      // never asked: the binding decides at once
    }

    @Override
    public void established(CmEvent event) {
      cancelDeadline();
      established = true;
      forward(event);
    }

    @Override
    public void failed(ConnectAttempt.Failure why) {
      cancelDeadline();
      failure = why;
      if (failed != null) failed.accept(why);
    }
  }

  /** Taken by whoever asks first: false when another stage or the timeout was first. */
  boolean claim() {
    if (!claimed.compareAndSet(false, true)) return false;
    unclaimed.decrementAndGet();
    return true;
  }

  /** Why accepting failed, or null; a failure before the accept went out left nothing open. */
  synchronized ConnectAttempt.Failure failure() {
    return failure;
  }

  ConnectionResources resources() {
    return res;
  }

  Wire.Ring peerRing() {
    return peerRing;
  }

  /**
   * The id's events, the CM reader's end, a failed handshake and the CQ's wake-ups go to the
   * claiming stage from now on, after those that came before.
   */
  synchronized void attach(Consumer<CmEvent> events, Consumer<RuntimeException> stopped,
      Consumer<ConnectAttempt.Failure> failed, Runnable wake) {
    this.events = events;
    this.stopped = stopped;
    this.failed = failed;
    this.wake = wake;
    while (!held.isEmpty()) events.accept(held.poll());
    if (failure != null) failed.accept(failure);
    if (readerStopped != null) stopped.accept(readerStopped);
    if (woken) wake.run();
  }

  /** Nobody took it in time, or the binding stopped first: the connection is closed and freed. */
  void abandon() {
    if (!claim() || res == null) return;
    synchronized (this) {
      cancelDeadline();
    }
    // the client's connection is up (or about to be): it hears the disconnect
    res.close(ConnectionResources.Farewell.DISCONNECT, SocketAddresses.format(remote));
  }

  /** Whether the connection was established before a stage heard of it. */
  synchronized boolean establishedEarly() {
    return established;
  }

  /**
   * Until the handshake is over its events are the attempt's (ESTABLISHED goes on to the stage,
   * a failure as one); after, and before the accept went out, they go on as they came. A held id
   * sees a handful in its life (ESTABLISHED, DISCONNECTED, TIMEWAIT_EXIT).
   */
  private synchronized void event(CmEvent e) {
    if (attempt != null && !attempt.step().over()) {
      attempt.cmEvent(e);
    } else {
      forward(e);
    }
  }

  private synchronized void deadlinePassed() {
    if (attempt != null) attempt.deadlinePassed();
  }

  private void forward(CmEvent e) {
    if (events != null) {
      events.accept(e);
    } else {
      held.add(e);
    }
  }

  private void cancelDeadline() {
    if (deadline != null) deadline.cancel();
    deadline = null;
  }

  private synchronized void readerStopped(RuntimeException why) {
    if (stopped != null) {
      stopped.accept(why);
    } else {
      readerStopped = why;
    }
  }

  private synchronized void wake() {
    if (wake != null) {
      wake.run();
    } else {
      woken = true;
    }
  }
}
