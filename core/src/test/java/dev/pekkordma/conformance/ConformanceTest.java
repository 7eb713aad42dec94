package dev.pekkordma.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.parallel.ResourceLock;

/** What every conformance class shares: the provider, the leak check, and small verbs helpers. */
@ExtendWith(ConformanceExtension.class)
@ResourceLock("pekko-rdma.conformance") // one device and one async event queue: never in parallel
public abstract class ConformanceTest {
  protected ConformanceProvider fx;
  protected String testName;

  @BeforeEach
  void openFixture(TestInfo info) {
    fx = ConformanceProvider.shared();
    testName = info.getTestClass().map(Class::getSimpleName).orElse("?") + "."
        + info.getTestMethod().map(m -> m.getName()).orElse(info.getDisplayName());
  }

  // ---- skipping, never silently

  /** Skips the test, printing why, unless {@code condition}. */
  protected void skipUnless(boolean condition, String reason) {
    if (!condition) {
      String msg = "provider '" + fx.provider.name() + "': " + reason;
      System.out.println("[conformance] SKIPPED " + testName + ": " + msg);
      Assumptions.abort(msg);
    }
  }

  protected void requireFeature(Feature feature) {
    skipUnless(fx.provider.supports(feature), feature.isBehaviour()
        ? "the device lacks " + feature + " (a probe found it does not: " + feature.meaning() + ")"
        : "does not support " + feature);
  }

  protected FaultInjection requireFaults() {
    skipUnless(FaultInjection.of(fx.provider).isPresent(),
        "has no fault injection (faults() is empty), so injected port/device/QP events can't be"
            + " provoked");
    return FaultInjection.of(fx.provider).get();
  }

  // ---- posting one request

  public static void postRecv(QueuePair qp, long wrId, Region r, int offset, int length) {
    try (RecvRequests rr = new RecvRequests(1, 1)) {
      rr.add(wrId).sge(r.mr, offset, length);
      qp.postRecv(rr);
    }
  }

  /** A receive with no scatter list (for RDMA write with immediate). */
  public static void postRecvNoSge(QueuePair qp, long wrId) {
    try (RecvRequests rr = new RecvRequests(1, 1)) {
      rr.add(wrId);
      qp.postRecv(rr);
    }
  }

  public static void send(QueuePair qp, long wrId, int flags, Region r, int offset, int length) {
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(wrId, WrOpcode.SEND, flags).sge(r.mr, offset, length);
      qp.postSend(sr);
    }
  }

  public static void sendImm(QueuePair qp, long wrId, int flags, Region r, int offset, int length,
      int imm) {
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(wrId, WrOpcode.SEND_WITH_IMM, flags).sge(r.mr, offset, length).immediate(imm);
      qp.postSend(sr);
    }
  }

  public static void write(QueuePair qp, long wrId, int flags, Region local, int offset,
      int length, long remoteAddress, int rkey) {
    rdma(qp, wrId, WrOpcode.RDMA_WRITE, flags, local, offset, length, remoteAddress, rkey);
  }

  public static void read(QueuePair qp, long wrId, int flags, Region local, int offset,
      int length, long remoteAddress, int rkey) {
    rdma(qp, wrId, WrOpcode.RDMA_READ, flags, local, offset, length, remoteAddress, rkey);
  }

  public static void rdma(QueuePair qp, long wrId, WrOpcode op, int flags, Region local,
      int offset, int length, long remoteAddress, int rkey) {
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(wrId, op, flags).sge(local.mr, offset, length).rdma(remoteAddress, rkey);
      qp.postSend(sr);
    }
  }

  public static void atomic(QueuePair qp, long wrId, WrOpcode op, Region local, int offset,
      long remoteAddress, int rkey, long compareOrAdd, long swap) {
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(wrId, op, SendRequests.SIGNALED).sge(local.mr, offset, 8)
          .atomic(remoteAddress, rkey, compareOrAdd, swap);
      qp.postSend(sr);
    }
  }

  // ---- async events

  /** The next async event matching {@code match}; fails listing every other event seen. */
  public static AsyncEvent awaitAsync(DeviceContext ctx, String what, Predicate<AsyncEvent> match,
      Duration timeout) {
    List<AsyncEvent> others = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        fail("expected async event " + what + " within " + timeout.toMillis() + " ms; got "
            + (others.isEmpty() ? "none" : "only " + others));
      }
      AsyncEvent e = ctx.nextAsyncEvent(Duration.ofNanos(left));
      if (e == null) continue;
      if (match.test(e)) return e;
      others.add(e);
    }
  }

  public static AsyncEvent awaitQpEvent(DeviceContext ctx, AsyncEventType type, QueuePair qp) {
    return awaitAsync(ctx, type + " on QP " + qp.qpNum(),
        e -> e.type() == type && e.qp() != null && e.qp().qpNum() == qp.qpNum(),
        ConformanceProvider.TIMEOUT);
  }

  /** Fails if an event matching {@code match} arrives within {@code quiet}; returns the others. */
  public static List<AsyncEvent> expectNoAsync(DeviceContext ctx, String what,
      Predicate<AsyncEvent> match, Duration quiet) {
    List<AsyncEvent> others = new ArrayList<>();
    long deadline = System.nanoTime() + quiet.toNanos();
    long left;
    while ((left = deadline - System.nanoTime()) > 0) {
      AsyncEvent e = ctx.nextAsyncEvent(Duration.ofNanos(left));
      if (e == null) continue;
      if (match.test(e)) fail("expected no " + what + ", got " + e + " (others: " + others + ")");
      others.add(e);
    }
    return others;
  }

  // ---- exceptions

  /** Runs {@code body}, which must fail with an RdmaException of {@code errno} whose message
   * contains every one of {@code mentions}. */
  public static RdmaException assertRdma(int errno, Executable body, String what,
      String... mentions) {
    RdmaException e = assertThrows(RdmaException.class, body, what + " must fail with "
        + RdmaException.errnoName(errno));
    assertEquals(errno, e.errno(), what + ": errno of \"" + e.getMessage() + "\"");
    assertMentions(e, what, mentions);
    return e;
  }

  /**
   * Runs {@code body}, which must be refused: an IllegalArgumentException, a NullPointerException
   * or an RdmaException with EINVAL (both are fine for argument checks made before the verb).
   */
  public static RuntimeException assertRejected(Executable body, String what,
      String... mentions) {
    RuntimeException e = assertThrows(RuntimeException.class, body, what + " must be rejected");
    boolean ok = e instanceof IllegalArgumentException || e instanceof NullPointerException
        || (e instanceof RdmaException && ((RdmaException) e).errno() == RdmaException.EINVAL);
    assertTrue(ok, what + ": expected IllegalArgumentException, NullPointerException or "
        + "RdmaException(EINVAL), got " + e);
    assertMentions(e, what, mentions);
    return e;
  }

  static void assertMentions(Throwable e, String what, String... mentions) {
    String msg = String.valueOf(e.getMessage());
    for (String m : mentions) {
      assertTrue(msg.contains(m), what + ": the message \"" + msg + "\" should mention '" + m
          + "'");
    }
  }

  static void assertMentionsAnyIgnoreCase(Throwable e, String what, String... candidates) {
    String msg = String.valueOf(e.getMessage()).toLowerCase();
    for (String c : candidates) {
      if (msg.contains(c.toLowerCase())) return;
    }
    fail(what + ": the message \"" + e.getMessage() + "\" should mention one of "
        + List.of(candidates));
  }

  // ---- data

  public static void assertBytes(byte[] expected, byte[] actual, String what) {
    assertArrayEquals(expected, actual, what);
  }

  public static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] p : parts) n += p.length;
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  public static byte[] slice(byte[] b, int from, int length) {
    byte[] out = new byte[length];
    System.arraycopy(b, from, out, 0, length);
    return out;
  }

  static void sleep(Duration d) {
    ConformanceExtension.sleepMillis(d.toMillis());
  }
}
