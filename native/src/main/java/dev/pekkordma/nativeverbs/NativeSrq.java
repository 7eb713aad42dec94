package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import dev.pekkordma.verbs.abi.RequestLayout;
import dev.pekkordma.verbs.spi.OpenChildren;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** A shared receive queue: {@code struct ibv_srq *}. */
final class NativeSrq extends NativeResource implements SharedReceiveQueue {
  final NativePd pd;
  final Set<NativeQp> users = ConcurrentHashMap.newKeySet();
  private final long fnPostSrqRecv;

  NativeSrq(NativePd pd, long srq) {
    super(srq, pd);
    this.pd = pd;
    this.fnPostSrqRecv = pd.context.fnPostSrqRecv;
    pd.context.srqsByHandle.put(srq, this);
  }

  @Override int rank() { return 1; }
  @Override public String describe() { return "SRQ 0x" + Long.toHexString(handle); }
  @Override String destroyVerb() { return "ibv_destroy_srq"; }
  @Override void destroy() { Verbs.destroySrq(handle); }

  @Override
  void forget() {
    pd.context.srqsByHandle.remove(handle);
    pd.context.provider.live.srqs.decrementAndGet();
  }

  @Override
  void checkNotInUse() {
    if (!users.isEmpty()) {
      throw new RdmaException("ibv_destroy_srq", RdmaException.EBUSY,
          describe() + " is still used by " + OpenChildren.names(users));
    }
  }

  @Override
  public ProtectionDomain pd() {
    return pd;
  }

  @Override
  public SrqAttributes query() {
    checkOpen("ibv_query_srq");
    long a = Verbs.scratch(Layout.SRQ_ATTR_SIZE);
    Verbs.querySrq(handle, a);
    return new SrqAttributes(NativeMemory.getInt(a + Layout.SRQ_ATTR_MAX_WR),
        NativeMemory.getInt(a + Layout.SRQ_ATTR_MAX_SGE),
        NativeMemory.getInt(a + Layout.SRQ_ATTR_SRQ_LIMIT));
  }

  @Override
  public void armLimit(int limit) {
    checkOpen("ibv_modify_srq");
    long a = Verbs.scratch(Layout.SRQ_ATTR_SIZE);
    NativeMemory.putInt(a + Layout.SRQ_ATTR_SRQ_LIMIT, limit);
    Verbs.modifySrq(handle, a, Layout.SRQ_LIMIT_MASK);
  }

  @Override
  public void postRecv(RecvRequests requests) {
    checkOpen("ibv_post_srq_recv");
    int n = requests.size();
    if (n == 0) return;
    long head = requests.linkForPost();
    long bad = Verbs.scratch(8);
    int rc = Verbs.post(fnPostSrqRecv, handle, head, bad);
    if (rc != 0) {
      long badWr = NativeMemory.getLong(bad);
      throw NativeQp.postFailure("ibv_post_srq_recv", describe(), rc, head, badWr,
          RequestLayout.RECV_WR_SIZE, n, requests::wrId, null, "SRQ limits " + query());
    }
  }

  @Override
  public String toString() {
    return describe();
  }
}
