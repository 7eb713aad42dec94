package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.Access.LOCAL_WRITE;
import static dev.pekkordma.verbs.Access.REMOTE_ATOMIC;
import static dev.pekkordma.verbs.Access.REMOTE_READ;
import static dev.pekkordma.verbs.Access.REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import org.junit.jupiter.api.Test;

/** Protection domains and memory regions. */
class MemoryRegionConformanceTest extends ConformanceTest {

  @Test
  void pdIsCountedAndClosed() {
    ResourceCounts before = fx.provider.liveResources();
    ProtectionDomain pd = fx.context.allocPd();
    try {
      assertSame(fx.context, pd.context(), "context of the PD");
      assertEquals(before.pds() + 1, fx.provider.liveResources().pds(), "PDs after allocPd");
    } finally {
      pd.close();
    }
    assertEquals(before.pds(), fx.provider.liveResources().pds(), "PDs after close");
  }

  @Test
  void mrReportsWhatWasRegisteredWithDistinctKeys() {
    ResourceCounts before = fx.provider.liveResources();
    try (ProtectionDomain pd = fx.context.allocPd();
        OffHeapBuffer b = OffHeapBuffer.allocate(8192)) {
      int access1 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;
      MemoryRegion m1 = pd.registerMemory(b.address(), 4096, access1);
      MemoryRegion m2 = pd.registerMemory(b.address() + 4096, 4096, LOCAL_WRITE | REMOTE_READ);
      MemoryRegion m3 = pd.registerMemory(b.address(), 8192, LOCAL_WRITE); // overlapping is fine
      try {
        assertEquals(before.mrs() + 3, fx.provider.liveResources().mrs(), "MRs after 3 reg_mr");
        assertSame(pd, m1.pd(), "PD of the MR");
        assertEquals(b.address(), m1.address(), "address of MR 1");
        assertEquals(4096, m1.length(), "length of MR 1");
        assertEquals(access1, m1.access(), "access of MR 1");
        assertEquals(b.address() + 4096, m2.address(), "address of MR 2");
        assertEquals(LOCAL_WRITE | REMOTE_READ, m2.access(), "access of MR 2");
        assertEquals(8192, m3.length(), "length of MR 3");
        assertNotEquals(m1.lkey(), m2.lkey(), "lkeys of two MRs");
        assertNotEquals(m1.lkey(), m3.lkey(), "lkeys of two MRs");
        assertNotEquals(m2.lkey(), m3.lkey(), "lkeys of two MRs");
        assertNotEquals(m1.rkey(), m2.rkey(), "rkeys of two MRs");
      } finally {
        m3.close();
        m2.close();
        m1.close();
      }
      assertEquals(before.mrs(), fx.provider.liveResources().mrs(), "MRs after dereg");
    }
  }

  @Test
  void mrRejectsRemoteWriteOrAtomicWithoutLocalWrite() {
    try (ProtectionDomain pd = fx.context.allocPd();
        OffHeapBuffer b = OffHeapBuffer.allocate(4096)) {
      assertRejected(() -> pd.registerMemory(b, REMOTE_WRITE).close(),
          "reg_mr REMOTE_WRITE without LOCAL_WRITE", "LOCAL_WRITE");
      assertRejected(() -> pd.registerMemory(b, REMOTE_ATOMIC | REMOTE_READ).close(),
          "reg_mr REMOTE_ATOMIC without LOCAL_WRITE", "LOCAL_WRITE");
    }
  }

  @Test
  void mrRejectsEmptyOrNegativeLength() {
    try (ProtectionDomain pd = fx.context.allocPd();
        OffHeapBuffer b = OffHeapBuffer.allocate(4096)) {
      assertRejected(() -> pd.registerMemory(b.address(), 0, LOCAL_WRITE).close(),
          "reg_mr of 0 bytes");
      assertRejected(() -> pd.registerMemory(b.address(), -4096, LOCAL_WRITE).close(),
          "reg_mr of -4096 bytes");
    }
  }

  @Test
  void closingPdWithLiveMrFailsEbusy() {
    ProtectionDomain pd = fx.context.allocPd();
    OffHeapBuffer b = OffHeapBuffer.allocate(4096);
    MemoryRegion mr = pd.registerMemory(b, LOCAL_WRITE);
    try {
      RdmaException e = assertRdma(RdmaException.EBUSY, pd::close, "closing a PD with an MR");
      assertMentionsAnyIgnoreCase(e, "closing a PD with an MR", "MR", "memory region");
      // the PD is still usable
      MemoryRegion another = pd.registerMemory(b, LOCAL_WRITE);
      another.close();
    } finally {
      mr.close();
      pd.close();
      b.close();
    }
  }

  @Test
  void closingPdWithLiveQpFailsEbusy() {
    ProtectionDomain pd = fx.context.allocPd();
    CompletionQueue cq = fx.context.createCq(8, null);
    QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    try {
      RdmaException e = assertRdma(RdmaException.EBUSY, pd::close, "closing a PD with a QP");
      assertMentionsAnyIgnoreCase(e, "closing a PD with a QP", "QP", "queue pair");
      RdmaException c = assertRdma(RdmaException.EBUSY, cq::close, "closing a CQ a QP uses");
      assertMentionsAnyIgnoreCase(c, "closing a CQ a QP uses", "QP", "queue pair");
    } finally {
      qp.close();
      cq.close();
      pd.close();
    }
  }

  /** ibv_rereg_mr moves the region and changes its rights; remote access follows. */
  @Test
  void reRegisterChangesTranslationAndAccess() {
    requireFeature(Feature.REREGISTER_MR);
    ProtectionDomain pd = fx.context.allocPd();
    try (Region target = Region.of(pd, 8192, LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ);
        Region local = Region.of(pd, 4096, LOCAL_WRITE)) {
      byte[] second = Region.pattern(256, 3);
      target.fill(0x11).put(4096, second);
      long base = target.address();
      target.mr.reRegister(base + 4096, 4096, LOCAL_WRITE | REMOTE_READ);
      assertEquals(base + 4096, target.mr.address(), "address after rereg");
      assertEquals(4096, target.mr.length(), "length after rereg");
      assertEquals(LOCAL_WRITE | REMOTE_READ, target.mr.access(), "access after rereg");
      int rkey = target.rkey();

      try (RcPair p = RcPair.builder().pd(pd).build(fx)) {
        read(p.a, 1, SendRequests.SIGNALED, local, 0, 256, base + 4096, rkey);
        Completions.awaitSuccess(p.aSendCq, "A send CQ", 1, WcOpcode.RDMA_READ);
        assertBytes(second, local.get(0, 256), "RDMA READ through the re-registered MR");
        write(p.a, 2, SendRequests.SIGNALED, local, 0, 64, base + 4096, rkey);
        Completions.awaitStatus(p.aSendCq, "A send CQ (write without REMOTE_WRITE any more)", 2,
            WcStatus.REM_ACCESS_ERR);
      }
      try (RcPair p = RcPair.builder().pd(pd).build(fx)) {
        read(p.a, 3, SendRequests.SIGNALED, local, 0, 64, base, rkey);
        Completions.awaitStatus(p.aSendCq, "A send CQ (read of the old range)", 3,
            WcStatus.REM_ACCESS_ERR);
      }
      assertBytes(Region.filled(4096, 0x11), target.get(0, 4096), "old range untouched");
      assertBytes(second, target.get(4096, 256), "new range untouched by the failed write");
    } finally {
      pd.close();
    }
  }
}
