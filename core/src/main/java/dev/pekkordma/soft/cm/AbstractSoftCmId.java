package dev.pekkordma.soft.cm;

import static dev.pekkordma.soft.cm.CmChecks.requireAddress;
import static dev.pekkordma.soft.cm.CmChecks.requireTimeout;
import static dev.pekkordma.verbs.RdmaException.ENETUNREACH;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledFuture;

/**
 * What the software CM's ids of every port space share: the state under the id's monitor, the
 * device serving the id's address, and address and route resolution as the kernel's CM does
 * them. How an id holds its port (a TCP or a UDP socket) is the subclass's, as are its
 * deadlines and what a device removal ends.
 */
abstract class AbstractSoftCmId implements SoftChannelId {
  final SoftCmEventChannel channel;
  final SoftCmSupport support;
  final CmResources resources;
  private final Object context;

  // guarded by this
  CmState state = CmState.IDLE;
  /** Counts state changes: a deadline fires only if the id is still in the state that set it. */
  long phase;
  /** What this phase scheduled (deadlines, resends): cancelled as it ends. */
  private final List<ScheduledFuture<?>> phaseTasks = new ArrayList<>(2);
  /** The state an address query falls back to when it fails. */
  CmState beforeQuery;
  final CmDevice device = new CmDevice();
  InetSocketAddress local;
  InetSocketAddress remote;
  QueuePair qp;

  AbstractSoftCmId(SoftCmEventChannel channel, Object context) {
    this.channel = channel;
    this.support = channel.support;
    this.resources = support.cmResources();
    this.context = context;
  }

  /**
   * Takes a port at {@code ip} ({@code port} 0: any free one) for an id that resolves an address
   * unbound, and attaches the device serving {@code ip}: the id's local address. Throws,
   * having taken nothing, when either fails.
   */
  abstract InetSocketAddress takePort(InetAddress ip, int port);

  /** A deadline set in phase {@code setInPhase}: acts only if the id never left that phase. */
  abstract void deadline(long setInPhase);

  /** The device serving the id's address is gone (on the channel's thread). */
  abstract void deviceRemoved();

  /**
   * Lets go of what the id holds besides its QP and device, as it is destroyed (under the
   * monitor, before the state becomes DESTROYED): what is left to do once the monitor is
   * released, or null.
   */
  abstract Runnable letGo();

  /** Whether {@code destination} may have port 0 (a multicast group's, for a datagram id). */
  boolean takesPortZero(InetSocketAddress destination) {
    return false;
  }

  @Override
  public Object context() {
    return context;
  }

  @Override
  public CmEventChannel channel() {
    return channel;
  }

  @Override
  public synchronized DeviceContext verbs() {
    return device.verbs;
  }

  @Override
  public synchronized int portNum() {
    return device.verbs != null ? 1 : 0;
  }

  @Override
  public synchronized InetSocketAddress localAddress() {
    return local;
  }

  @Override
  public synchronized InetSocketAddress remoteAddress() {
    if (remote != null || local == null) return remote;
    // as the kernel's rdma_bind_addr: the destination takes the bound address's family, no more
    return CmChecks.unspecified(local.getAddress());
  }

  @Override
  public synchronized QueuePair qp() {
    return qp;
  }

  synchronized CmState state() {
    return state;
  }

  // ---- addresses and routes

  /** What {@code rdma_bind_addr} checks first: an address, the IDLE state, a local interface. */
  void checkBindable(String verb, InetSocketAddress address) {
    requireAddress(verb, "address", address);
    expect(verb, "IDLE", CmState.IDLE);
    if (!CmChecks.isLocal(address.getAddress())) {
      throw new RdmaException(verb, RdmaException.ENODEV, "no local interface has address "
          + address.getAddress().getHostAddress());
    }
  }

  @Override
  public synchronized void resolveAddress(
      InetSocketAddress source, InetSocketAddress destination, Duration timeout) {
    String verb = "rdma_resolve_addr";
    if (destination == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "destination is null");
    }
    if (destination.getPort() == 0 && !takesPortZero(destination)) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "destination " + destination + " has port 0");
    }
    if (source != null) requireAddress(verb, "source", source);
    requireTimeout(verb, timeout);
    expect(verb, "IDLE or ADDR_BOUND", CmState.IDLE, CmState.ADDR_BOUND);
    beforeQuery = state;
    setState(CmState.ADDR_QUERY);
    long query = phase;
    inThisPhase(() -> deadline(query), timeout);
    if (destination.isUnresolved()) { // a name lookup may block: not on the caller's thread
      CmChecks.daemon("soft-cm-resolve-" + destination.getPort(),
          () -> resolve(query, source, destination)).start();
    } else {
      resolve(query, source, destination); // a route lookup: quick, and the event says the rest
    }
  }

  /** Finds the route and source address as the kernel would, then takes a port there. */
  private void resolve(long query, InetSocketAddress source, InetSocketAddress destination) {
    InetAddress from;
    synchronized (this) {
      if (phase != query) return;
      from = beforeQuery == CmState.ADDR_BOUND ? local.getAddress()
          : source != null ? source.getAddress() : null;
    }
    CmRoute route;
    try {
      route = CmRoute.find(from, destination);
    } catch (CmRoute.Unreachable e) {
      addressError(query, -e.errno);
      return;
    }
    synchronized (this) {
      if (phase != query) return;
      InetAddress via = route.source();
      if (beforeQuery == CmState.IDLE) {
        InetAddress ip = from == null || from.isAnyLocalAddress() ? via : from;
        try {
          local = takePort(ip, source == null ? 0 : source.getPort());
        } catch (RuntimeException e) {
          addressError(query, -(e instanceof RdmaException r ? r.errno() : RdmaException.ENODEV));
          return;
        }
      } else if (local.getAddress().isAnyLocalAddress()) {
        local = new InetSocketAddress(via, local.getPort());
      }
      remote = route.target();
      setState(CmState.ADDR_RESOLVED);
      post(CmEventType.ADDR_RESOLVED, 0);
      addressResolved();
    }
  }

  /** The address is resolved (under the monitor): what may start now to save time later. */
  void addressResolved() {}

  private synchronized void addressError(long query, int status) {
    if (phase != query) return;
    setState(beforeQuery);
    post(CmEventType.ADDR_ERROR, status);
  }

  @Override
  public synchronized void resolveRoute(Duration timeout) {
    String verb = "rdma_resolve_route";
    requireTimeout(verb, timeout);
    expect(verb, "ADDR_RESOLVED (resolve the address first)", CmState.ADDR_RESOLVED);
    // the port's state is all there is to look up; the event says it
    if (device.portActive(support)) {
      setState(CmState.ROUTE_RESOLVED);
      post(CmEventType.ROUTE_RESOLVED, 0);
    } else {
      // as in rdma_cm, the id falls back to ADDR_RESOLVED and may try again
      setState(CmState.ADDR_RESOLVED);
      post(CmEventType.ROUTE_ERROR, -ENETUNREACH);
    }
  }

  // ---- destruction

  @Override
  public void destroyForShutdown() {
    synchronized (this) {
      CmQpSteps.closeQuietly(qp);
      qp = null;
    }
    try {
      close();
    } catch (RuntimeException e) {
      // going away regardless
    }
  }

  @Override
  public final void close() {
    CmDevice.Taken taken;
    Runnable after;
    synchronized (this) {
      if (state == CmState.DESTROYED) return;
      if (qp != null) {
        throw new RdmaException("rdma_destroy_id", RdmaException.EBUSY, "the id in state " + state
            + " still has QP " + qp.qpNum() + "; destroy it first (destroyQp)");
      }
      after = letGo();
      setState(CmState.DESTROYED);
      taken = device.take();
    }
    if (after != null) after.run();
    // the id is gone even if giving back its context fails: report that after the bookkeeping
    RuntimeException failure = taken.release(support);
    for (CmId id : channel.forget(this)) {
      try {
        id.close();
      } catch (RuntimeException e) {
        if (failure == null) failure = e;
        else failure.addSuppressed(e);
      }
    }
    support.countCmId(-1);
    if (failure != null) throw failure;
  }

  // ---- helpers (callers hold the monitor where state is touched)

  void setState(CmState s) {
    state = s;
    phase++;
    for (ScheduledFuture<?> task : phaseTasks) task.cancel(false);
    phaseTasks.clear();
  }

  /**
   * Runs {@code task} on the channel's thread after {@code delay} unless the state changes
   * first. A deadline that was met is taken out of the timer rather than left to fire for
   * nothing: ten thousand connects would leave tens of thousands, waking the channel's thread
   * for seconds after the last of them.
   */
  void inThisPhase(Runnable task, Duration delay) {
    phaseTasks.removeIf(Future::isDone); // a resend's earlier rounds
    ScheduledFuture<?> scheduled = channel.schedule(task, delay);
    if (scheduled != null) phaseTasks.add(scheduled);
  }

  /** An event with no private data. */
  void post(CmEventType type, int status) {
    channel.post(new CmEvent(type, this, null, status, new byte[0], null));
  }

  void expect(String verb, String needed, CmState... allowed) {
    CmChecks.expect(verb, state, needed, allowed);
  }

  /** Takes the device context serving {@code address} and watches for its removal. */
  void attach(InetAddress address) {
    // the provider may call back holding its own locks: hand the work to the channel's thread
    device.attach(support, address, () -> channel.schedule(this::deviceRemoved, Duration.ZERO));
  }
}
