package dev.pekkordma.soft;

/**
 * What a section of the provider's work leaves for its end: completion events raised while the
 * thread holds the provider's locks, and flushes of the fabric links it wrote requests to. A
 * channel's direct handler wakes the CQ's owner, who polls at once: signalled under the CQ's and
 * the QP's monitors, the woken poller would spin on them while the signalling thread finishes
 * its wake-up call. A link flushed once for a burst of requests makes one system call (or one
 * doorbell) for them all. Sections that complete requests ({@link SoftQp}'s work, requests and
 * responses) enter and exit; outside them an event or a flush goes at once.
 */
final class DeferredWork {
  private static final ThreadLocal<DeferredWork> CURRENT =
      ThreadLocal.withInitial(DeferredWork::new);

  private int depth;
  private SoftCq[] due = new SoftCq[8];
  private int count;
  private FabricLink[] written = new FabricLink[4];
  private int links;

  private DeferredWork() {}

  /** Enters a deferring section; pair with {@link #exit()} in a finally block. */
  static DeferredWork enter() {
    DeferredWork d = CURRENT.get();
    d.depth++;
    return d;
  }

  /**
   * Leaves the section; the outermost exit flushes the links written in it, then delivers what
   * was raised in it.
   */
  void exit() {
    if (--depth > 0) return;
    while (links > 0) {
      FabricLink link = written[--links];
      written[links] = null;
      link.flushDeferred();
    }
    // a handler that posts raises more: they are taken here too, in any order (one per CQ)
    while (count > 0) {
      SoftCq cq = due[--count];
      due[count] = null;
      if (!cq.isClosed()) cq.channel.signal(cq); // destroyed since: its events went with it
    }
  }

  /** The CQ's armed event fired: now, or at the end of the thread's section. */
  static void raise(SoftCq cq) {
    DeferredWork d = CURRENT.get();
    if (d.depth == 0) {
      cq.channel.signal(cq);
      return;
    }
    if (d.count == d.due.length) d.due = java.util.Arrays.copyOf(d.due, d.count * 2);
    d.due[d.count++] = cq;
  }

  /**
   * Whether {@code link}'s flush is left to the end of this thread's section (false outside one:
   * the caller flushes now). A link is listed once however many requests went to it.
   */
  static boolean flushLater(FabricLink link) {
    DeferredWork d = CURRENT.get();
    if (d.depth == 0) return false;
    for (int i = 0; i < d.links; i++) {
      if (d.written[i] == link) return true;
    }
    if (d.links == d.written.length) d.written = java.util.Arrays.copyOf(d.written, d.links * 2);
    d.written[d.links++] = link;
    return true;
  }
}
