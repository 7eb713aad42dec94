package dev.pekkordma.samples;

import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;

/**
 * A CQ with its completion channel and a reusable completion batch. {@link #await} polls, spins a
 * little, then arms the CQ and sleeps on the channel: busy enough for throughput, idle enough to
 * leave the cores to the peer on a small machine. Allocates nothing after construction.
 */
public final class CompletionPoller implements AutoCloseable {
  private static final Duration WAIT_SLICE = Duration.ofMillis(50);
  private static final Duration NO_WAIT = Duration.ZERO;

  public final CompletionChannel channel;
  public final CompletionQueue cq;
  public final WorkCompletions wcs;
  private final int spins;
  private boolean armed;
  private int unacked;
  private boolean closed;

  public CompletionPoller(DeviceContext context, int cqEntries, int batch, int spins) {
    CompletionChannel ch = context.createCompletionChannel();
    CompletionQueue q = null;
    try {
      q = context.createCq(cqEntries, ch);
      this.wcs = new WorkCompletions(batch);
    } catch (RuntimeException e) {
      if (q != null) q.close();
      ch.close();
      throw e;
    }
    this.channel = ch;
    this.cq = q;
    this.spins = spins;
  }

  /** Polls once: the number of completions now in {@link #wcs}. */
  public int poll() {
    return cq.poll(wcs);
  }

  /** Completions in {@link #wcs}, waiting at most {@code timeoutNanos}; 0 when none came. */
  public int await(long timeoutNanos) {
    int n = cq.poll(wcs);
    if (n > 0) return n;
    for (int i = 0; i < spins; i++) {
      Thread.onSpinWait();
      n = cq.poll(wcs);
      if (n > 0) return n;
    }
    long deadline = System.nanoTime() + timeoutNanos;
    while (true) {
      if (!armed) {
        cq.requestNotify(false);
        armed = true;
        // a completion that came before the arm raises no event: look again
        n = cq.poll(wcs);
        if (n > 0) return n;
      }
      if (System.nanoTime() - deadline >= 0) return 0;
      CompletionQueue fired = channel.awaitEvent(WAIT_SLICE);
      if (fired != null) {
        armed = false;
        if (++unacked >= 64) ackAll();
        n = cq.poll(wcs);
        if (n > 0) return n;
      }
    }
  }

  private void ackAll() {
    if (unacked > 0) {
      channel.ackEvents(cq, unacked);
      unacked = 0;
    }
  }

  /** Closes CQ and channel; destroy the QPs on the CQ first. */
  @Override
  public void close() {
    if (closed) return;
    closed = true;
    try {
      // an armed CQ may still have fired: collect and acknowledge every event, or it won't close
      CompletionQueue fired;
      while ((fired = channel.awaitEvent(NO_WAIT)) != null) {
        if (fired == cq) unacked++;
      }
      ackAll();
      cq.close();
    } finally {
      try {
        channel.close();
      } finally {
        wcs.close();
      }
    }
  }
}
