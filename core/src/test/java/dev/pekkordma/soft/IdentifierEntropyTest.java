package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.testing.CollisionEntropy;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * QP numbers and rkeys carry nearly all their bits at random, measured over many allocations
 * with a few objects alive at a time (as connections come and go): knowing one says nothing
 * about the next. The figures go to the docs' security model.
 */
class IdentifierEntropyTest {
  private static final int ALLOCATIONS = 1 << 15;
  private static final int ALIVE = 16;

  @Test
  void qpNumbersCarryAbout24RandomBits() throws Exception {
    try (HostileFabric fx = new HostileFabric()) {
      int[] qpns = new int[ALLOCATIONS];
      QueuePair[] alive = new QueuePair[ALIVE];
      Random churn = new Random(1);
      for (int i = 0; i < qpns.length; i++) {
        int k = churn.nextInt(ALIVE);
        if (alive[k] != null) alive[k].close();
        alive[k] = fx.pd.createQp(QpInitAttributes.of(QpType.RC, fx.cq, fx.cq).maxSendWr(1)
            .maxRecvWr(1));
        qpns[i] = alive[k].qpNum();
      }
      for (QueuePair q : alive) q.close();
      double bits = CollisionEntropy.ofDifferences(qpns, 24);
      System.out.printf("[entropy] QPN: %.1f random bits of 24 over %d allocations%n", bits,
          ALLOCATIONS);
      assertTrue(bits > 22, "QP numbers carry " + bits + " random bits");
    }
  }

  @Test
  void rkeysCarryAtLeast26RandomBits() throws Exception {
    try (HostileFabric fx = new HostileFabric(); OffHeapBuffer memory = OffHeapBuffer.allocate(4096)) {
      int[] rkeys = new int[ALLOCATIONS];
      MemoryRegion[] alive = new MemoryRegion[ALIVE];
      Random churn = new Random(2);
      for (int i = 0; i < rkeys.length; i++) {
        int k = churn.nextInt(ALIVE);
        if (alive[k] != null) alive[k].close();
        alive[k] = fx.pd.registerMemory(memory.address(), 4096, Access.LOCAL_WRITE
            | Access.REMOTE_READ);
        rkeys[i] = alive[k].rkey();
      }
      for (MemoryRegion m : alive) m.close();
      // 2^15 draws from 2^32 rarely collide at all: the estimate is then a lower bound. Random
      // rkeys make 0.125 equal pairs of differences on average (29 bits with one, 28 with two,
      // about once in 140 runs); 26 bits allow six, which they reach about once in 10^10 runs,
      // while a counter or a slot index scores a few bits
      double bits = CollisionEntropy.ofDifferences(rkeys, 32);
      System.out.printf("[entropy] rkey: at least %.1f random bits of 32 over %d registrations%n",
          bits, ALLOCATIONS);
      assertTrue(bits > 26, "rkeys carry " + bits + " random bits");
    }
  }
}
