package dev.pekkordma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Completion queues: size, batched polls, resize, overrun. */
class CompletionQueueConformanceTest extends ConformanceTest {

  @Test
  void capacityIsAtLeastWhatWasAsked() {
    int before = fx.provider.liveResources().cqs();
    CompletionQueue small = fx.context.createCq(1, null);
    CompletionQueue big = fx.context.createCq(1000, null);
    try {
      assertTrue(small.capacity() >= 1, "capacity of createCq(1): " + small.capacity());
      assertTrue(big.capacity() >= 1000, "capacity of createCq(1000): " + big.capacity());
      assertSame(fx.context, big.context(), "context of the CQ");
      assertEquals(before + 2, fx.provider.liveResources().cqs(), "CQs after 2 creates");
      try (WorkCompletions wcs = new WorkCompletions(4)) {
        assertEquals(0, small.poll(wcs), "poll of an empty CQ");
      }
    } finally {
      big.close();
      small.close();
    }
    assertEquals(before, fx.provider.liveResources().cqs(), "CQs after close");
  }

  /** Posts {@code n} signaled writes of 8 bytes from A to B, wr_ids first..first+n-1. */
  private static void writes(RcPair p, Region local, Region remote, long first, int n) {
    try (SendRequests sr = new SendRequests(n, 1)) {
      for (int i = 0; i < n; i++) {
        sr.add(first + i, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(local.mr, 8L * i, 8)
            .rdma(remote.address(8L * i), remote.rkey());
      }
      p.a.postSend(sr);
    }
  }

  @Test
  void pollReturnsAtMostTheArraysCapacityInOrder() {
    try (RcPair p = RcPair.open(fx);
        Region local = Region.of(p.pd, 4096, Link.ALL_REMOTE);
        Region remote = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
      writes(p, local, remote, 0, 10);
      sleep(Duration.ofMillis(300)); // loopback writes: all 10 are in the CQ by now
      List<Integer> batches = new ArrayList<>();
      List<Long> ids = new ArrayList<>();
      long deadline = System.nanoTime() + ConformanceProvider.TIMEOUT.toNanos();
      try (WorkCompletions wcs = new WorkCompletions(4)) {
        while (ids.size() < 10 && System.nanoTime() < deadline) {
          int k = p.aSendCq.poll(wcs);
          assertTrue(k >= 0 && k <= 4, "poll into 4 entries returned " + k);
          if (k > 0) batches.add(k);
          for (int i = 0; i < k; i++) {
            assertEquals(WcStatus.SUCCESS, wcs.status(i), wcs.describe(i));
            assertEquals(WcOpcode.RDMA_WRITE, wcs.opcode(i), wcs.describe(i));
            assertEquals(p.a.qpNum(), wcs.qpNum(i), wcs.describe(i));
            ids.add(wcs.wrId(i));
          }
        }
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L), ids, "wr_ids polled");
        assertEquals(4, batches.get(0), "first poll of a CQ holding 10: batches " + batches);
        assertEquals(List.of(4, 4, 2), batches, "batches of 4 out of 10");
        assertEquals(0, p.aSendCq.poll(wcs), "poll after all 10");
      }
    }
  }

  @Test
  void resizeGrowsAndRefusesToDropCompletions() {
    requireFeature(Feature.CQ_RESIZE);
    CompletionQueue cq = fx.context.createCq(4, null);
    try {
      cq.resize(64);
      assertTrue(cq.capacity() >= 64, "capacity after resize(64): " + cq.capacity());
      try (RcPair p = RcPair.builder().aCqs(cq, null).maxSendWr(64).build(fx);
          Region local = Region.of(p.pd, 4096, Link.ALL_REMOTE);
          Region remote = Region.of(p.pd, 4096, Link.ALL_REMOTE)) {
        writes(p, local, remote, 0, 20);
        List<Wc> got = Completions.await(cq, 20, "resized CQ");
        for (int i = 0; i < 20; i++) {
          assertEquals(WcStatus.SUCCESS, got.get(i).status(), got.get(i).toString());
          assertEquals(i, got.get(i).wrId(), got.get(i).toString());
        }
        writes(p, local, remote, 100, 8);
        sleep(Duration.ofMillis(300));
        assertRdma(RdmaException.EINVAL, () -> cq.resize(2),
            "resize(2) of a CQ holding 8 completions");
        List<Wc> kept = Completions.await(cq, 8, "CQ after the refused resize");
        for (int i = 0; i < 8; i++) assertEquals(100 + i, kept.get(i).wrId(), kept.toString());
      }
    } finally {
      cq.close();
    }
  }

  @Test
  void overrunRaisesCqErr() {
    requireFeature(Feature.CQ_OVERRUN_ERROR);
    CompletionQueue cq = fx.context.createCq(4, null);
    try {
      int n = cq.capacity() + 2;
      try (RcPair p = RcPair.builder().aCqs(cq, null).maxSendWr(n + 2).build(fx);
          Region local = Region.of(p.pd, 8 * n, Link.ALL_REMOTE);
          Region remote = Region.of(p.pd, 8 * n, Link.ALL_REMOTE)) {
        writes(p, local, remote, 0, n);
        awaitAsync(fx.context, "CQ_ERR on the overrun CQ",
            e -> e.type() == AsyncEventType.CQ_ERR && e.cq() == cq, ConformanceProvider.TIMEOUT);
        try (WorkCompletions wcs = new WorkCompletions(n)) {
          RdmaException e = assertThrows(RdmaException.class, () -> cq.poll(wcs),
              "poll of an overrun CQ (capacity " + cq.capacity() + ", " + n + " completions)");
          assertMentionsAnyIgnoreCase(e, "poll of an overrun CQ", "overrun", "overflow",
              "CQ_ERR", "error");
        }
      }
    } finally {
      cq.close();
    }
  }
}
