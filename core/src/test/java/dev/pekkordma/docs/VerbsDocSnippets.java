package dev.pekkordma.docs;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;

/**
 * The code of docs/verbs-and-soft-provider.md, compiled with the tests so that the page cannot
 * drift from the API ({@link DocSnippetsTest} checks each block is one of these regions).
 */
final class VerbsDocSnippets {
  private VerbsDocSnippets() {}

  static QueuePair setUp() {
    // tag::verbs-setup[]
    RdmaProvider provider = RdmaProviders.load();            // pekko-rdma.provider = auto | native | soft
    DeviceContext ctx = provider.open(provider.devices().get(0));
    ProtectionDomain pd = ctx.allocPd();
    OffHeapBuffer buf = OffHeapBuffer.allocate(1 << 20);
    MemoryRegion mr = pd.registerMemory(buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    CompletionQueue cq = ctx.createCq(256, null);
    QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    qp.modify(QpAttributes.toInit(1, Access.REMOTE_WRITE));  // RESET -> INIT -> RTR -> RTS
    // end::verbs-setup[]
    return qp;
  }

  static int post(QueuePair qp, CompletionQueue cq, MemoryRegion mr, long remoteAddr, int rkey) {
    // tag::verbs-post[]
    SendRequests wrs = new SendRequests(64, 4);               // reusable, off-heap, ibv_send_wr layout
    wrs.add(1, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, 0, 4096).rdma(remoteAddr, rkey);
    qp.postSend(wrs);                                         // the whole batch in one call
    WorkCompletions wcs = new WorkCompletions(64);            // ibv_wc layout
    int n = cq.poll(wcs);
    // end::verbs-post[]
    return n;
  }
}
