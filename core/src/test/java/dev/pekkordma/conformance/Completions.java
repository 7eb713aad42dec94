package dev.pekkordma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/** Polling a CQ for what a test expects, failing with what did arrive. */
public final class Completions {
  private Completions() {}

  /** Exactly the next {@code n} completions of {@code cq}, waiting at most {@code timeout}. */
  public static List<Wc> await(CompletionQueue cq, int n, String what, Duration timeout) {
    List<Wc> got = new ArrayList<>(n);
    long deadline = System.nanoTime() + timeout.toNanos();
    WorkCompletions wcs = null;
    try {
      while (got.size() < n) {
        int want = n - got.size();
        if (wcs == null || wcs.capacity() != want) {
          if (wcs != null) wcs.close();
          wcs = new WorkCompletions(want);
        }
        int k = cq.poll(wcs);
        if (k < 0 || k > want) {
          fail(what + ": poll returned " + k + " with room for " + want);
        }
        for (int i = 0; i < k; i++) got.add(Wc.read(wcs, i));
        if (k == 0) {
          if (System.nanoTime() > deadline) {
            fail("expected " + n + " completions on " + what + " within " + timeout.toMillis()
                + " ms, got " + got.size() + ": " + got);
          }
          LockSupport.parkNanos(200_000);
        }
      }
      return got;
    } finally {
      if (wcs != null) wcs.close();
    }
  }

  public static List<Wc> await(CompletionQueue cq, int n, String what) {
    return await(cq, n, what, ConformanceProvider.TIMEOUT);
  }

  public static Wc awaitOne(CompletionQueue cq, String what) {
    return await(cq, 1, what).get(0);
  }

  /** The next completion, which must be a success of {@code opcode} for {@code wrId}. */
  public static Wc awaitSuccess(CompletionQueue cq, String what, long wrId, WcOpcode opcode) {
    Wc wc = awaitOne(cq, what);
    assertEquals(WcStatus.SUCCESS, wc.status(), what + ": " + wc);
    assertEquals(wrId, wc.wrId(), what + ": wr_id of " + wc);
    assertEquals(opcode, wc.opcode(), what + ": opcode of " + wc);
    return wc;
  }

  /** The next completion, which must have {@code status} for {@code wrId}. */
  public static Wc awaitStatus(CompletionQueue cq, String what, long wrId, WcStatus status) {
    Wc wc = awaitOne(cq, what);
    assertEquals(status, wc.status(), what + ": status of " + wc);
    assertEquals(wrId, wc.wrId(), what + ": wr_id of " + wc);
    return wc;
  }

  /** Whatever arrives until {@code quiet} passes without a completion. */
  public static List<Wc> drain(CompletionQueue cq, Duration quiet) {
    List<Wc> got = new ArrayList<>();
    try (WorkCompletions wcs = new WorkCompletions(32)) {
      long idleSince = System.nanoTime();
      while (System.nanoTime() - idleSince < quiet.toNanos()) {
        int k = cq.poll(wcs);
        for (int i = 0; i < k; i++) got.add(Wc.read(wcs, i));
        if (k > 0) {
          idleSince = System.nanoTime();
        } else {
          LockSupport.parkNanos(500_000);
        }
      }
    }
    return got;
  }

  /** Fails if any completion arrives on {@code cq} within {@code quiet}. */
  public static void expectNone(CompletionQueue cq, String what, Duration quiet) {
    List<Wc> got = drain(cq, quiet);
    if (!got.isEmpty()) fail("expected no completion on " + what + ", got " + got);
  }

  public static void expectNone(CompletionQueue cq, String what) {
    expectNone(cq, what, ConformanceProvider.QUIET);
  }
}
