package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.spi.OpenChildren;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A completion queue: {@code struct ibv_cq *}. Polling and arming call the driver's functions from
 * the context's ops table directly (ibv_poll_cq and ibv_req_notify_cq are inline in verbs.h) and
 * poll straight into the {@link WorkCompletions} memory.
 */
final class NativeCq extends NativeResource implements CompletionQueue {
  final NativeDeviceContext context;
  final NativeChannel channel;
  final AtomicInteger unacked = new AtomicInteger();
  final Set<NativeQp> users = ConcurrentHashMap.newKeySet();
  private final long fnPoll;
  private final long fnReqNotify;

  NativeCq(NativeDeviceContext context, NativeChannel channel, long cq) {
    super(cq, context);
    this.context = context;
    this.channel = channel;
    this.fnPoll = context.fnPollCq;
    this.fnReqNotify = context.fnReqNotifyCq;
    context.cqsByHandle.put(cq, this);
    if (channel != null) channel.users.add(this);
  }

  @Override int rank() { return 20; }
  @Override public String describe() { return "CQ 0x" + Long.toHexString(handle); }
  @Override String destroyVerb() { return "ibv_destroy_cq"; }
  @Override void destroy() { Verbs.destroyCq(handle); }

  @Override
  void forget() {
    context.cqsByHandle.remove(handle);
    if (channel != null) channel.users.remove(this);
    context.provider.live.cqs.decrementAndGet();
  }

  @Override
  void checkNotInUse() {
    users.removeIf(NativeResource::isClosed);
    if (!users.isEmpty()) {
      throw new RdmaException("ibv_destroy_cq", RdmaException.EBUSY,
          describe() + " is still used by " + OpenChildren.names(users));
    }
    int un = unacked.get();
    if (un > 0) {
      // ibv_destroy_cq would wait for ever for them
      throw new RdmaException("ibv_destroy_cq", RdmaException.EBUSY, describe() + " has " + un
          + " completion event(s) read from its channel and not acknowledged (ackEvents)");
    }
  }

  @Override
  void beforeForcedClose() {
    int un = unacked.getAndSet(0);
    if (un > 0) Verbs.ackCqEvents(handle, un);
  }

  @Override public DeviceContext context() { return context; }
  @Override public int capacity() { return NativeMemory.getInt(handle + Layout.CQ_CQE); }
  @Override public CompletionChannel channel() { return channel; }

  @Override
  public int poll(WorkCompletions completions) {
    if (isClosed()) checkOpen("ibv_poll_cq");
    int n = Verbs.pollCq(fnPoll, handle, completions.capacity(), completions.address());
    if (n < 0) {
      throw Verbs.fail("ibv_poll_cq", n == -1 ? RdmaException.EIO : n,
          describe() + " is in error (overrun?)");
    }
    return n;
  }

  @Override
  public void requestNotify(boolean solicitedOnly) {
    checkOpen("ibv_req_notify_cq");
    int rc = Verbs.reqNotifyCq(fnReqNotify, handle, solicitedOnly);
    if (rc != 0) throw Verbs.fail("ibv_req_notify_cq", rc, "arming " + describe());
  }

  @Override
  public void resize(int cqe) {
    checkOpen("ibv_resize_cq");
    if (cqe <= 0) {
      throw new RdmaException("ibv_resize_cq", RdmaException.EINVAL, "cqe = " + cqe + " must be positive");
    }
    Verbs.resizeCq(handle, cqe);
  }

  @Override
  public String toString() {
    return describe();
  }
}
