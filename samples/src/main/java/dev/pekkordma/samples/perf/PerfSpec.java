package dev.pekkordma.samples.perf;

import dev.pekkordma.verbs.QpType;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * What one rdma-perf run measures: the test, the message sizes (ascending), the iterations per
 * size and the queue settings. The client sends it to the server in the connect request's
 * private data (at most 56 bytes), so a server needs no test options of its own.
 *
 * @param test the operation and what is measured
 * @param sizes message sizes in bytes, ascending and distinct
 * @param iterations measured iterations per size
 * @param warmup unmeasured iterations before each size's measured ones, or {@link #AUTO_WARMUP}
 * @param txDepth most send requests in flight (bandwidth tests; latency tests keep one)
 * @param rxDepth receives kept posted by the side that receives sends
 * @param cqModeration one signaled send request in every this many
 * @param inlineSize messages up to this many bytes are posted inline (0: none)
 * @param qps queue pairs per side (bandwidth tests): each makes {@code iterations} requests
 * @param duration seconds each size runs for instead of {@code iterations} (0: count iterations)
 * @param margin seconds at each end of a duration run left out of the measurement
 * @param bidirectional both sides send (bandwidth tests); the figures are the sum
 * @param connection the QPs' transport
 */
public record PerfSpec(PerfTest test, int[] sizes, int iterations, int warmup, int txDepth,
    int rxDepth, int cqModeration, int inlineSize, int qps, int duration, int margin,
    boolean bidirectional, QpType connection) {

  /** One RC QP, counted iterations, one direction. */
  public PerfSpec(PerfTest test, int[] sizes, int iterations, int warmup, int txDepth,
      int rxDepth, int cqModeration, int inlineSize) {
    this(test, sizes, iterations, warmup, txDepth, rxDepth, cqModeration, inlineSize, 1, 0, 0,
        false, QpType.RC);
  }

  /** The sizes of {@code -a}: every power of two from 2 bytes to 8 MiB. */
  public static final int[] ALL_SIZES = allSizes();
  /**
   * Warm-up by size, long enough for the JIT on a busy machine: before the first size 50,000
   * iterations (10,000 for latency tests) or 256 MiB, whichever is less; before each later one
   * 1,000 or 64 MiB; never fewer than 10.
   */
  public static final int AUTO_WARMUP = -1;
  static final int MAGIC = 0x5250; // "RP"
  static final byte VERSION = 2;
  private static final int FLAG_ALL_SIZES = 1;
  private static final int FLAG_BIDIRECTIONAL = 2;
  private static final int HEADER = 29;

  private static int[] allSizes() {
    int[] s = new int[23];
    for (int i = 0; i < s.length; i++) s[i] = 2 << i;
    return s;
  }

  /** Runs for a time rather than a count of iterations (perftest's -D). */
  public boolean timed() {
    return duration > 0;
  }

  /** The same run with other sizes (UD's -a stops at the path MTU). */
  PerfSpec withSizes(int[] s) {
    return new PerfSpec(test, s, iterations, warmup, txDepth, rxDepth, cqModeration, inlineSize,
        qps, duration, margin, bidirectional, connection);
  }

  /** Whether the answering side has a loop of its own: it receives sends, or sends too. */
  boolean responderWorks() {
    return test.verb() == PerfTest.Verb.SEND || bidirectional;
  }

  /** Unmeasured iterations before the measured ones of {@code size} (a timed run has margins). */
  public int warmupFor(int size) {
    if (timed()) return 0;
    if (warmup != AUTO_WARMUP) return warmup;
    boolean first = size == sizes[0];
    long count = first ? (test.bandwidth() ? 50_000 : 10_000) : 1_000;
    long bytes = first ? 256L << 20 : 64L << 20;
    return (int) Math.min(count, Math.max(10, bytes / size));
  }

  /** A bandwidth test's warm-up requests of {@code size} on each QP: the warm-up, spread. */
  int warmupPerQp(int size) {
    return (warmupFor(size) + qps - 1) / qps;
  }

  /** The most warm-up iterations of any size. */
  int maxWarmup() {
    int m = 0;
    for (int s : sizes) m = Math.max(m, warmupFor(s));
    return m;
  }

  public int maxSize() {
    return sizes[sizes.length - 1];
  }

  /** Messages of {@code size} go inline. */
  public boolean inline(int size) {
    return size <= inlineSize && test.verb() != PerfTest.Verb.READ;
  }

  /** The connect request's private data. */
  public byte[] encode() {
    boolean all = Arrays.equals(sizes, ALL_SIZES);
    ByteBuffer b = ByteBuffer.allocate(HEADER).order(ByteOrder.BIG_ENDIAN);
    int flags = (all ? FLAG_ALL_SIZES : 0) | (bidirectional ? FLAG_BIDIRECTIONAL : 0);
    b.putShort((short) MAGIC).put(VERSION).put((byte) test.ordinal()).put((byte) flags)
        .putInt(iterations).putInt(warmup).putShort((short) txDepth).putShort((short) rxDepth)
        .putShort((short) cqModeration).putShort((short) inlineSize).putShort((short) qps)
        .putShort((short) duration).putShort((short) margin).put((byte) connection.code)
        .put((byte) (all ? 0 : sizes.length));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(b.array(), 0, HEADER);
    if (!all) {
      for (int s : sizes) {
        long v = s & 0xffffffffL;
        while (v >= 0x80) {
          out.write((int) (v & 0x7f) | 0x80);
          v >>>= 7;
        }
        out.write((int) v);
      }
    }
    return out.toByteArray();
  }

  /** Bytes {@link #encode} takes for these sizes (for the option check before connecting). */
  static int encodedLength(int[] sizes) {
    if (Arrays.equals(sizes, ALL_SIZES)) return HEADER;
    int n = HEADER;
    for (int s : sizes) {
      long v = s & 0xffffffffL;
      do {
        n++;
        v >>>= 7;
      } while (v != 0);
    }
    return n;
  }

  /** Reads a client's request; a {@link PerfFailure} says what is wrong with it. */
  public static PerfSpec decode(byte[] data) {
    if (data == null || data.length < HEADER) {
      throw new PerfFailure("the client's request has " + (data == null ? 0 : data.length)
          + " bytes of private data, not an rdma-perf request (is the peer rdma-perf?)");
    }
    ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.BIG_ENDIAN);
    int magic = b.getShort() & 0xffff;
    if (magic != MAGIC) {
      throw new PerfFailure("not an rdma-perf request: magic 0x" + Integer.toHexString(magic));
    }
    byte version = b.get();
    if (version != VERSION) {
      throw new PerfFailure("the client speaks rdma-perf protocol " + version + ", this server "
          + VERSION);
    }
    int test = b.get();
    if (test < 0 || test >= PerfTest.values().length) {
      throw new PerfFailure("unknown test " + test + " in the client's request");
    }
    int flags = b.get();
    int iterations = b.getInt();
    int warmup = b.getInt();
    int tx = b.getShort() & 0xffff;
    int rx = b.getShort() & 0xffff;
    int cqMod = b.getShort() & 0xffff;
    int inline = b.getShort() & 0xffff;
    int qps = b.getShort() & 0xffff;
    int duration = b.getShort() & 0xffff;
    int margin = b.getShort() & 0xffff;
    int type = b.get();
    if (type != QpType.RC.code && type != QpType.UC.code && type != QpType.UD.code) {
      throw new PerfFailure("unknown connection type " + type + " in the client's request");
    }
    int count = b.get() & 0xff;
    int[] sizes;
    if ((flags & FLAG_ALL_SIZES) != 0) {
      sizes = ALL_SIZES.clone();
    } else {
      sizes = new int[count];
      for (int i = 0; i < count; i++) {
        long v = 0;
        for (int shift = 0; ; shift += 7) {
          if (!b.hasRemaining() || shift > 28) {
            throw new PerfFailure("the client's request ends inside its size list");
          }
          int by = b.get() & 0xff;
          v |= (long) (by & 0x7f) << shift;
          if ((by & 0x80) == 0) break;
        }
        sizes[i] = (int) v;
      }
    }
    PerfSpec s = new PerfSpec(PerfTest.values()[test], sizes, iterations, warmup, tx, rx, cqMod,
        inline, qps, duration, margin, (flags & FLAG_BIDIRECTIONAL) != 0, QpType.of(type));
    String bad = s.problem();
    if (bad != null) throw new PerfFailure("nonsense request from the client: " + bad);
    return s;
  }

  /** What is inconsistent, or null. */
  String problem() {
    if (sizes.length == 0) return "no message size";
    for (int i = 0; i < sizes.length; i++) {
      if (sizes[i] <= 0) return "message size " + sizes[i];
      if (i > 0 && sizes[i] <= sizes[i - 1]) return "sizes not ascending";
    }
    if (iterations <= 0) return "iterations " + iterations;
    if (warmup < AUTO_WARMUP) return "warm-up iterations " + warmup;
    if (txDepth <= 0 || rxDepth <= 0 || cqModeration <= 0) return "queue depths";
    if (test.bandwidth() && cqModeration > txDepth) return "CQ moderation above the TX depth";
    if (!test.bandwidth() && iterations < 5) return "fewer than 5 latency iterations";
    if (inlineSize < 0) return "inline size " + inlineSize;
    if (qps < 1 || (qps > 1 && !test.bandwidth())) return "queue pairs " + qps;
    if (duration < 0 || margin < 0 || (timed() && duration <= 2 * margin)) return "duration";
    if (timed() && !test.bandwidth()) return "a duration for a latency test";
    if (bidirectional && !test.bandwidth()) return "a bidirectional latency test";
    if (!connection.allows(test.verb().opcode)) return test.label() + " on " + connection;
    return null;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PerfSpec p && test == p.test && Arrays.equals(sizes, p.sizes)
        && iterations == p.iterations && warmup == p.warmup && txDepth == p.txDepth
        && rxDepth == p.rxDepth && cqModeration == p.cqModeration && inlineSize == p.inlineSize
        && qps == p.qps && duration == p.duration && margin == p.margin
        && bidirectional == p.bidirectional && connection == p.connection;
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(sizes) * 31 + test.hashCode() + iterations;
  }

  @Override
  public String toString() {
    return test.label() + " sizes=" + Arrays.toString(sizes) + " iterations=" + iterations
        + " warmup=" + warmup + " tx=" + txDepth + " rx=" + rxDepth + " cqMod=" + cqModeration
        + " inline=" + inlineSize + " qps=" + qps + (timed() ? " duration=" + duration
        + "s margin=" + margin + "s" : "") + (bidirectional ? " bidirectional" : "") + " "
        + connection;
  }
}
