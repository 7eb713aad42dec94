package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/**
 * The port's max-msg-size is a message's limit, inclusive: exactly that many bytes go (2^31 by
 * default, IB's own limit, whose byte count no longer fits a signed int), one more is
 * LOC_LEN_ERR.
 */
class MessageSizeLimitTest {

  @Test
  void aMessageOfExactlyMaxMsgSizeGoesAndOneByteMoreIsRefused() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory.parseString(
        "pekko-rdma.provider = soft\npekko-rdma.soft.max-msg-size = 1048576")
        .withFallback(ConfigFactory.load()))) {
      check(provider, 1 << 20, 1 << 19);
    }
  }

  @Test
  void theDefaultTwoGibibytesGoWhole() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory.parseString(
        "pekko-rdma.provider = soft").withFallback(ConfigFactory.load()))) {
      check(provider, 1L << 31, 1 << 30);
    }
  }

  /** Writes {@code limit} bytes, gathered from two SGEs over one {@code half}-byte source. */
  private static void check(RdmaProvider provider, long limit, int half) throws Exception {
    long source = NativeMemory.allocate(half);
    long target = NativeMemory.allocate(limit + 8);
    try {
      NativeMemory.zero(target, limit + 8);
      for (long at = 0; at < half; at += 4096) NativeMemory.putLong(source + at, at + 1);
      DeviceContext ctx = provider.open(provider.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(8, null);
      QueuePair a = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendSge(3));
      QueuePair b = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
      HostileFabric.connect(a, ctx.queryGid(1, 0), b.qpNum(), 14, 1);
      HostileFabric.connect(b, ctx.queryGid(1, 0), a.qpNum(), 14, 1);
      MemoryRegion src = pd.registerMemory(source, half, HostileFabric.ACCESS);
      MemoryRegion dst = pd.registerMemory(target, limit + 8, HostileFabric.ACCESS);
      try (SendRequests s = new SendRequests(1, 3); WorkCompletions wc = new WorkCompletions(4)) {
        s.add(1, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(src, 0, half).sge(src, 0, half)
            .rdma(target, dst.rkey());
        a.postSend(s);
        assertEquals(WcStatus.SUCCESS, await(cq, wc), "exactly " + limit + " bytes");
        assertEquals(limit, Integer.toUnsignedLong(wc.byteLength(0)), "byte_len, unsigned");
        assertEquals(1, NativeMemory.getLong(target), "the first half landed");
        assertEquals(1, NativeMemory.getLong(target + half), "the second half landed");
        assertEquals(half - 4096 + 1, NativeMemory.getLong(target + limit - 4096), "the end");
        assertEquals(0, NativeMemory.getLong(target + limit), "nothing after it");

        s.clear();
        s.add(2, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(src, 0, half).sge(src, 0, half)
            .sge(src, 0, 1).rdma(target, dst.rkey());
        a.postSend(s);
        assertEquals(WcStatus.LOC_LEN_ERR, await(cq, wc), "one byte more than " + limit);
      }
      a.close();
      b.close();
      src.close();
      dst.close();
      cq.close();
      pd.close();
      ctx.close();
    } finally {
      NativeMemory.free(source);
      NativeMemory.free(target);
    }
  }

  private static WcStatus await(CompletionQueue cq, WorkCompletions wc) throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (cq.poll(wc) > 0) return wc.status(0);
      Thread.sleep(1);
    }
    throw new AssertionError("no completion");
  }
}
