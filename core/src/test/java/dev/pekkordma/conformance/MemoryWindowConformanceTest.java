package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.Access.LOCAL_WRITE;
import static dev.pekkordma.verbs.Access.MW_BIND;
import static dev.pekkordma.verbs.Access.REMOTE_READ;
import static dev.pekkordma.verbs.Access.REMOTE_WRITE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WrOpcode;
import org.junit.jupiter.api.Test;

/**
 * Memory windows: bound to part of a region with narrower rights, the window's rkey grants only
 * that range and those rights; an invalidated or unbound window grants nothing. Every scenario
 * uses a fresh window and a fresh connection (a remote access error breaks the connection).
 */
class MemoryWindowConformanceTest extends ConformanceTest {
  private static final int MR_ACCESS = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | MW_BIND;
  private static final int WIN_OFF = 1024;
  private static final int WIN_LEN = 1024;

  private interface Scenario {
    void run(RcPair p, MemoryWindow mw, int rkey, Region target, Region local);
  }

  /** Binds a fresh window of {@code type} over [WIN_OFF, WIN_OFF+WIN_LEN) with {@code access}. */
  private void withWindow(MemoryWindow.Type type, int access, Scenario s) {
    ProtectionDomain pd = fx.context.allocPd();
    try (Region target = Region.of(pd, 4096, MR_ACCESS);
        Region local = Region.of(pd, 4096, LOCAL_WRITE)) {
      target.fill(0x42);
      // the window goes before the QPs: a bound type 2 window holds the QP it was bound
      // through, and rxe's QP destroy waits (about 50 s) for such references to go
      try (RcPair p = RcPair.builder().pd(pd).build(fx);
          MemoryWindow mw = pd.allocMemoryWindow(type)) {
        assertEquals(type, mw.type(), "window type");
        assertSame(pd, mw.pd(), "window PD");
        int rkey = bind(p, mw, target, WIN_OFF, WIN_LEN, access, 900);
        s.run(p, mw, rkey, target, local);
      }
    } finally {
      pd.close();
    }
  }

  /** Binds as the type requires, waits for the BIND_MW completion, returns the window's rkey. */
  private int bind(RcPair p, MemoryWindow mw, Region target, int offset, int length, int access,
      long wrId) {
    int rkey;
    if (mw.type() == MemoryWindow.Type.TYPE_1) {
      rkey = p.b.bindMemoryWindow(mw, wrId, SendRequests.SIGNALED, target.mr,
          target.address(offset), length, access);
    } else {
      rkey = MemoryWindow.nextRkey(mw.rkey());
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(wrId, WrOpcode.BIND_MW, SendRequests.SIGNALED)
            .bindMw(mw, rkey, target.mr, target.address(offset), length, access);
        p.b.postSend(sr);
      }
    }
    Completions.awaitSuccess(p.bSendCq, "B send CQ (bind)", wrId, WcOpcode.BIND_MW);
    assertEquals(rkey, mw.rkey(), "window rkey after bind");
    assertNotEquals(target.rkey(), rkey, "window rkey vs MR rkey");
    return rkey;
  }

  private void accessInsideWorks(MemoryWindow.Type type) {
    withWindow(type, REMOTE_READ | REMOTE_WRITE, (p, mw, rkey, target, local) -> {
      byte[] data = Region.pattern(256, 1);
      local.put(0, data);
      write(p.a, 1, SendRequests.SIGNALED, local, 0, 256, target.address(WIN_OFF + 100), rkey);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 1, WcOpcode.RDMA_WRITE);
      assertBytes(data, target.get(WIN_OFF + 100, 256), "written through the window");
      read(p.a, 2, SendRequests.SIGNALED, local, 1024, WIN_LEN, target.address(WIN_OFF), rkey);
      Completions.awaitSuccess(p.aSendCq, "A send CQ", 2, WcOpcode.RDMA_READ);
      assertBytes(target.get(WIN_OFF, WIN_LEN), local.get(1024, WIN_LEN),
          "the whole window read back");
      assertBytes(Region.filled(WIN_OFF, 0x42), target.get(0, WIN_OFF), "before the window");
    });
  }

  private void accessOutsideFails(MemoryWindow.Type type) {
    requireFeature(Feature.MEMORY_WINDOW_BOUNDS);
    withWindow(type, REMOTE_READ | REMOTE_WRITE, (p, mw, rkey, target, local) -> {
      // the MR allows it, the window does not: it ends at WIN_OFF + WIN_LEN
      write(p.a, 1, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF + WIN_LEN - 32),
          rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (write across the window's end)", 1,
          WcStatus.REM_ACCESS_ERR);
      assertBytes(Region.filled(4096, 0x42), target.all(), "target after the refused write");
    });
    withWindow(type, REMOTE_READ | REMOTE_WRITE, (p, mw, rkey, target, local) -> {
      read(p.a, 1, SendRequests.SIGNALED, local, 0, 64, target.address(0), rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (read before the window)", 1,
          WcStatus.REM_ACCESS_ERR);
    });
  }

  private void otherRightsFail(MemoryWindow.Type type) {
    withWindow(type, REMOTE_READ, (p, mw, rkey, target, local) -> {
      read(p.a, 1, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF), rkey);
      Completions.awaitSuccess(p.aSendCq, "A send CQ (read of a read-only window)", 1,
          WcOpcode.RDMA_READ);
      local.fill(0x99);
      write(p.a, 2, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF), rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (write to a read-only window)", 2,
          WcStatus.REM_ACCESS_ERR);
      assertBytes(Region.filled(4096, 0x42), target.all(), "target after the refused write");
    });
    withWindow(type, REMOTE_WRITE, (p, mw, rkey, target, local) -> {
      read(p.a, 1, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF), rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (read of a write-only window)", 1,
          WcStatus.REM_ACCESS_ERR);
    });
  }

  @Test
  void type1AccessInsideTheWindowWorks() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_1);
    accessInsideWorks(MemoryWindow.Type.TYPE_1);
  }

  @Test
  void type1AccessOutsideTheWindowFails() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_1);
    accessOutsideFails(MemoryWindow.Type.TYPE_1);
  }

  @Test
  void type1OtherRightsFail() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_1);
    otherRightsFail(MemoryWindow.Type.TYPE_1);
  }

  @Test
  void type1UnbindRevokesAccessAndMrWontCloseWhileBound() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_1);
    withWindow(MemoryWindow.Type.TYPE_1, REMOTE_READ, (p, mw, rkey, target, local) -> {
      RdmaException e = assertRdma(RdmaException.EBUSY, target.mr::close,
          "deregistering an MR with a bound window");
      assertMentionsAnyIgnoreCase(e, "deregistering an MR with a bound window", "window", "MW");
      int after = p.b.bindMemoryWindow(mw, 901, SendRequests.SIGNALED, target.mr,
          target.address(WIN_OFF), 0, 0);
      Completions.awaitSuccess(p.bSendCq, "B send CQ (unbind)", 901, WcOpcode.BIND_MW);
      assertNotEquals(rkey, after, "rkey after unbind");
      read(p.a, 1, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF), rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (read through an unbound window)", 1,
          WcStatus.REM_ACCESS_ERR);
    });
  }

  @Test
  void type2AccessInsideTheWindowWorks() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_2);
    accessInsideWorks(MemoryWindow.Type.TYPE_2);
  }

  @Test
  void type2AccessOutsideTheWindowFails() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_2);
    accessOutsideFails(MemoryWindow.Type.TYPE_2);
  }

  @Test
  void type2OtherRightsFail() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_2);
    otherRightsFail(MemoryWindow.Type.TYPE_2);
  }

  @Test
  void type2LocalInvalidateRevokesAccess() {
    requireFeature(Feature.MEMORY_WINDOW_TYPE_2);
    withWindow(MemoryWindow.Type.TYPE_2, REMOTE_READ, (p, mw, rkey, target, local) -> {
      RdmaException e = assertRdma(RdmaException.EBUSY, target.mr::close,
          "deregistering an MR with a bound window");
      assertMentionsAnyIgnoreCase(e, "deregistering an MR with a bound window", "window", "MW");
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(902, WrOpcode.LOCAL_INV, SendRequests.SIGNALED).invalidate(rkey);
        p.b.postSend(sr);
      }
      Completions.awaitSuccess(p.bSendCq, "B send CQ (local invalidate)", 902,
          WcOpcode.LOCAL_INV);
      read(p.a, 1, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF), rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (read through an invalidated window)", 1,
          WcStatus.REM_ACCESS_ERR);
    });
  }

  @Test
  void type2RemoteInvalidateBySendWithInv() {
    requireFeature(Feature.WC_WITH_INV_FLAG);
    requireFeature(Feature.MEMORY_WINDOW_TYPE_2);
    withWindow(MemoryWindow.Type.TYPE_2, REMOTE_READ, (p, mw, rkey, target, local) -> {
      postRecv(p.b, 50, target, 3000, 64);
      local.put(0, Region.pattern(16, 5));
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(3, WrOpcode.SEND_WITH_INV, SendRequests.SIGNALED).sge(local.mr, 0, 16)
            .invalidate(rkey);
        p.a.postSend(sr);
      }
      Completions.awaitSuccess(p.aSendCq, "A send CQ (send with invalidate)", 3, WcOpcode.SEND);
      Wc r = Completions.awaitSuccess(p.bRecvCq, "B recv CQ", 50, WcOpcode.RECV);
      assertEquals(16, r.byteLen(), "byte_len of " + r);
      assertEquals(true, r.hasInv(), "WITH_INV flag of " + r);
      assertEquals(rkey, r.invalidatedRkey(), "invalidated rkey of " + r);
      read(p.a, 4, SendRequests.SIGNALED, local, 0, 64, target.address(WIN_OFF), rkey);
      Completions.awaitStatus(p.aSendCq, "A send CQ (read through a remotely invalidated window)",
          4, WcStatus.REM_ACCESS_ERR);
    });
  }

  @Test
  void windowsAreCounted() {
    skipUnless(fx.provider.supports(Feature.MEMORY_WINDOW_TYPE_1)
        || fx.provider.supports(Feature.MEMORY_WINDOW_TYPE_2), "supports no memory window type");
    MemoryWindow.Type type = fx.provider.supports(Feature.MEMORY_WINDOW_TYPE_1)
        ? MemoryWindow.Type.TYPE_1 : MemoryWindow.Type.TYPE_2;
    int before = fx.provider.liveResources().mws();
    try (ProtectionDomain pd = fx.context.allocPd()) {
      MemoryWindow mw = pd.allocMemoryWindow(type);
      assertEquals(before + 1, fx.provider.liveResources().mws(), "MWs after alloc");
      RdmaException e = assertRdma(RdmaException.EBUSY, pd::close, "closing a PD with a window");
      assertMentionsAnyIgnoreCase(e, "closing a PD with a window", "MW", "window");
      mw.close();
    }
    assertEquals(before, fx.provider.liveResources().mws(), "MWs after close");
  }
}
