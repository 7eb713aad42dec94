package dev.pekkordma.soft;

import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import java.util.concurrent.atomic.AtomicInteger;

final class SoftSrq extends Closeable implements SharedReceiveQueue {
  final SoftPd pd;
  final ReceiveRing ring;
  final AtomicInteger users = new AtomicInteger();
  private final int number;
  private int limit; // 0: not armed

  SoftSrq(SoftPd pd, SrqAttributes attrs) {
    this.pd = pd;
    if (attrs == null) {
      throw new RdmaException("ibv_create_srq", RdmaException.EINVAL, "attributes are null");
    }
    var s = pd.device.settings;
    if (attrs.maxWr() < 1 || attrs.maxWr() > s.maxSrqWr) {
      throw new RdmaException("ibv_create_srq", RdmaException.EINVAL,
          "maxWr = " + attrs.maxWr() + " is outside [1, " + s.maxSrqWr + "] (max_srq_wr)");
    }
    if (attrs.maxSge() < 1 || attrs.maxSge() > s.maxSge) {
      throw new RdmaException("ibv_create_srq", RdmaException.EINVAL,
          "maxSge = " + attrs.maxSge() + " is outside [1, " + s.maxSge + "] (max_srq_sge)");
    }
    if (attrs.limit() < 0 || attrs.limit() > attrs.maxWr()) {
      throw new RdmaException("ibv_create_srq", RdmaException.EINVAL,
          "limit = " + attrs.limit() + " is outside [0, maxWr " + attrs.maxWr() + "]");
    }
    this.ring = new ReceiveRing(attrs.maxWr(), attrs.maxSge());
    this.limit = attrs.limit();
    this.number = pd.device.provider.nextObjectNumber();
  }

  @Override
  public String describe() {
    return "SRQ " + number;
  }

  @Override public ProtectionDomain pd() { return pd; }

  @Override
  public synchronized SrqAttributes query() {
    checkOpen("ibv_query_srq");
    return new SrqAttributes(ring.capacity(), ring.maxSge(), limit);
  }

  @Override
  public synchronized void armLimit(int newLimit) {
    checkOpen("ibv_modify_srq");
    if (newLimit < 0 || newLimit > ring.capacity()) {
      throw new RdmaException("ibv_modify_srq", RdmaException.EINVAL, describe() + ": limit "
          + newLimit + " is outside [0, " + ring.capacity() + "] (its max_wr)");
    }
    limit = newLimit;
  }

  @Override
  public synchronized void postRecv(RecvRequests requests) {
    checkOpen("ibv_post_srq_recv");
    for (int i = 0; i < requests.size(); i++) {
      int n = requests.numSge(i);
      if (n > ring.maxSge()) {
        throw new RdmaException("ibv_post_srq_recv", RdmaException.EINVAL, "request " + i
            + " (wr_id " + requests.wrId(i) + ") has " + n + " SGEs; " + describe()
            + " takes at most " + ring.maxSge());
      }
      if (ring.isFull()) {
        throw new RdmaException("ibv_post_srq_recv", RdmaException.ENOMEM, "request " + i
            + " (wr_id " + requests.wrId(i) + "): " + describe() + " already holds "
            + ring.capacity() + " receives (max_wr)");
      }
      ring.push(requests, i);
    }
  }

  /** Called with the consuming QP's lock held, after taking the head: fires the limit once. */
  synchronized void afterTake(SoftContext context) {
    if (limit > 0 && ring.size() < limit) {
      limit = 0;
      context.raise(AsyncEvent.ofSrq(AsyncEventType.SRQ_LIMIT_REACHED, this));
    }
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    if (users.get() > 0) {
      reopen();
      throw new RdmaException("ibv_destroy_srq", RdmaException.EBUSY,
          describe() + " is still used by " + users.get() + " QPs");
    }
    synchronized (this) {
      ring.close();
    }
    pd.forget(this);
    pd.device.provider.counters.srqs.decrementAndGet();
  }
}
