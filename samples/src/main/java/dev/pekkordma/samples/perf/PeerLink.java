package dev.pekkordma.samples.perf;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the two sides of a bandwidth run tell each other between runs, as perftest's sides do
 * over their TCP socket: how many messages each sent (so that a receiver knows when a run is
 * over, a timed one too, and on UC or UD, which drop what finds no receive, stops waiting for
 * what will not come), then each side's figures (a bidirectional run adds them). A message is a
 * slot's four numbers and the run's number; a side waits for the peer's before it goes on, so a
 * slot is never written again before it was read.
 *
 * <p>In one JVM the two ends share memory ({@link #pair}); through the CM ({@link WireLink}, RC
 * only) a message is an RDMA WRITE into the peer's control area, its stamp last, as write_lat's
 * byte.
 */
abstract class PeerLink {
  /** "I sent {@code v0} messages in this run." */
  static final int SENT = 0;
  /** "My figures for this run": iterations, then peak, average and rate as double bits. */
  static final int DONE = 1;
  /** wr_id of the link's writes, which the loops leave alone. */
  static final long CONTROL = -1L;

  /**
   * Tells the peer {@code v0..v3} in {@code slot} for run {@code run}. Returns whether a work
   * request was posted, whose completion (wr_id {@link #CONTROL}) comes on this side's CQ.
   */
  abstract boolean tell(int slot, int run, long v0, long v1, long v2, long v3);

  /** Whether the peer's message in {@code slot} for run {@code run} has come. */
  abstract boolean heard(int slot, int run);

  /** Number {@code i} of the peer's last message in {@code slot}. */
  abstract long value(int slot, int i);

  /** Two ends sharing memory, for both sides in one JVM. */
  static PeerLink[] pair() {
    AtomicLongArray a = new AtomicLongArray(10);
    AtomicLongArray b = new AtomicLongArray(10);
    return new PeerLink[] {new Shared(a, b), new Shared(b, a)};
  }

  private static final class Shared extends PeerLink {
    private final AtomicLongArray out;
    private final AtomicLongArray in;

    Shared(AtomicLongArray out, AtomicLongArray in) {
      this.out = out;
      this.in = in;
    }

    @Override
    boolean tell(int slot, int run, long v0, long v1, long v2, long v3) {
      int at = slot * 5;
      out.setPlain(at, v0);
      out.setPlain(at + 1, v1);
      out.setPlain(at + 2, v2);
      out.setPlain(at + 3, v3);
      out.setRelease(at + 4, run + 1L);
      return false;
    }

    @Override
    boolean heard(int slot, int run) {
      return in.getAcquire(slot * 5 + 4) == run + 1L;
    }

    @Override
    long value(int slot, int i) {
      return in.getPlain(slot * 5 + i);
    }
  }

  /**
   * Through the first QP (RC): this side's control area holds the peer's two slots, then the two
   * it writes from. Every side lays its buffer out alike ({@link PerfSide#controlOffset}), so
   * the peer's area is known from its buffer's address.
   */
  static final class WireLink extends PeerLink {
    static final int RECORD = 40;
    static final int AREA = 4 * RECORD;
    private final PerfSide side;
    private final long in;
    private final long out;

    WireLink(PerfSide side) {
      this.side = side;
      this.in = side.mr.address() + PerfSide.controlOffset(side.spec);
      this.out = in + 2L * RECORD;
    }

    @Override
    boolean tell(int slot, int run, long v0, long v1, long v2, long v3) {
      long at = out + (long) slot * RECORD;
      NativeMemory.putLong(at, v0);
      NativeMemory.putLong(at + 8, v1);
      NativeMemory.putLong(at + 16, v2);
      NativeMemory.putLong(at + 24, v3);
      NativeMemory.putLong(at + 32, run + 1L);
      VarHandle.releaseFence();
      long to = side.remote.address() + PerfSide.controlOffset(side.spec) + (long) slot * RECORD;
      SendRequests s = side.sends;
      s.clear();
      s.add(CONTROL, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(at, RECORD, side.lkey)
          .rdma(to, side.remote.rkey());
      side.qps[0].postSend(s);
      return true;
    }

    @Override
    boolean heard(int slot, int run) {
      VarHandle.acquireFence(); // the peer's NIC writes it
      return NativeMemory.getLong(in + (long) slot * RECORD + 32) == run + 1L;
    }

    @Override
    long value(int slot, int i) {
      return NativeMemory.getLong(in + (long) slot * RECORD + 8L * i);
    }
  }
}
