package dev.pekkordma.soft;

/**
 * Completion events raised while a thread holds the provider's locks, delivered once it has let
 * them go. A channel's direct handler wakes the CQ's owner, who polls at once: signalled under
 * the CQ's and the QP's monitors, the woken poller would spin on them while the signalling
 * thread finishes its wake-up call. Sections that complete requests ({@link SoftQp}'s work,
 * requests and responses) enter and exit; outside them an event goes at once.
 */
final class DeferredSignals {
  private static final ThreadLocal<DeferredSignals> CURRENT =
      ThreadLocal.withInitial(DeferredSignals::new);

  private int depth;
  private SoftCq[] due = new SoftCq[8];
  private int count;

  private DeferredSignals() {}

  /** Enters a deferring section; pair with {@link #exit()} in a finally block. */
  static DeferredSignals enter() {
    DeferredSignals d = CURRENT.get();
    d.depth++;
    return d;
  }

  /** Leaves the section; the outermost exit delivers what was raised in it. */
  void exit() {
    if (--depth > 0) return;
    // a handler that posts raises more: they are taken here too, in any order (one per CQ)
    while (count > 0) {
      SoftCq cq = due[--count];
      due[count] = null;
      if (!cq.isClosed()) cq.channel.signal(cq); // destroyed since: its events went with it
    }
  }

  /** The CQ's armed event fired: now, or at the end of the thread's section. */
  static void raise(SoftCq cq) {
    DeferredSignals d = CURRENT.get();
    if (d.depth == 0) {
      cq.channel.signal(cq);
      return;
    }
    if (d.count == d.due.length) d.due = java.util.Arrays.copyOf(d.due, d.count * 2);
    d.due[d.count++] = cq;
  }
}
