package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.IllegalQpTransitionException;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The native provider on a real device: Soft-RoCE's rxe_lo in the VM (native/softroce/vm; see
 * native/softroce/run-native-tests.sh). Runs only with {@code -Dpekko-rdma.provider=native}; then
 * a missing device fails rather than skips.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@EnabledIfSystemProperty(named = "pekko-rdma.provider", matches = "native", disabledReason =
    "needs -Dpekko-rdma.provider=native and an RDMA device (native/softroce/run-native-tests.sh"
        + " runs it in the Soft-RoCE VM)")
class NativeSmokeTest {
  static final String DEVICE = System.getProperty("pekko-rdma.native.device", "rxe_lo");
  static final int PORT = 1;
  static final int GID_INDEX = Integer.getInteger("pekko-rdma.native.gid-index", 1);
  static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
      | Access.REMOTE_ATOMIC;

  static RdmaProvider provider;
  static Map<String, Integer> baseline;

  @BeforeAll
  static void open() throws Exception {
    baseline = rdmaResources(DEVICE);
    System.out.println("rdma resource show " + DEVICE + " before: " + baseline);
    provider = RdmaProviders.load(ConfigFactory.load());
    assertEquals("native", provider.name());
    System.out.println("devices: " + provider.devices());
  }

  @AfterAll
  static void close() throws Exception {
    if (provider == null) return;
    provider.close();
    assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    Map<String, Integer> after = rdmaResources(DEVICE);
    System.out.println("rdma resource show " + DEVICE + " after close: " + after);
    assertBackTo(baseline, after);
  }

  /** Two RC QPs on one device, connected to each other by hand over GID index 1. */
  static final class Pair implements AutoCloseable {
    final DeviceContext ctx;
    final ProtectionDomain pd;
    final CompletionChannel channel;
    final CompletionQueue cqA;
    final CompletionQueue cqB;
    final QueuePair a;
    final QueuePair b;
    final OffHeapBuffer bufA = OffHeapBuffer.allocate(8192);
    final OffHeapBuffer bufB = OffHeapBuffer.allocate(8192);
    final MemoryRegion mrA;
    final MemoryRegion mrB;
    final WorkCompletions wc = new WorkCompletions(16);

    Pair(RdmaProvider provider) {
      ctx = provider.open(DEVICE);
      pd = ctx.allocPd();
      channel = ctx.createCompletionChannel();
      cqA = ctx.createCq(64, null);
      cqB = ctx.createCq(64, channel);
      QpInitAttributes init = QpInitAttributes.of(QpType.RC, cqA, cqA).maxSendWr(32)
          .maxRecvWr(32).maxSendSge(2).maxRecvSge(2);
      a = pd.createQp(init);
      b = pd.createQp(QpInitAttributes.of(QpType.RC, cqB, cqB).maxSendWr(32).maxRecvWr(32)
          .maxSendSge(2).maxRecvSge(2));
      mrA = pd.registerMemory(bufA, ALL);
      mrB = pd.registerMemory(bufB, ALL);
      Gid gid = ctx.queryGid(PORT, GID_INDEX);
      PortAttributes port = ctx.queryPort(PORT);
      connect(a, b, gid, port);
      connect(b, a, gid, port);
    }

    static void connect(QueuePair qp, QueuePair peer, Gid gid, PortAttributes port) {
      qp.modify(QpAttributes.toInit(PORT, ALL));
      qp.modify(QpAttributes.toRtr(AddressVector.global(gid, GID_INDEX, PORT), peer.qpNum(),
          1000 + peer.qpNum(), port.activeMtu()));
      qp.modify(QpAttributes.toRts(1000 + qp.qpNum()));
    }

    @Override
    public void close() {
      a.close();
      b.close();
      mrA.close();
      mrB.close();
      cqA.close();
      cqB.close();
      channel.close();
      pd.close();
      ctx.close();
      bufA.close();
      bufB.close();
      wc.close();
    }
  }

  /** Polls until {@code n} completions came (at most 10 s); returns how many came. */
  static int await(CompletionQueue cq, WorkCompletions wc, int n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    int got = 0;
    while (got < n && System.nanoTime() < deadline) {
      int k = cq.poll(wc);
      for (int i = 0; i < k; i++) {
        System.out.println("  " + wc.describe(i));
        assertEquals(WcStatus.SUCCESS, wc.status(i), wc.describe(i));
      }
      got += k;
      if (k == 0) Thread.sleep(1);
    }
    return got;
  }

  @Test
  @Order(1)
  void devicePortAndGid() {
    try (DeviceContext ctx = provider.open(DEVICE)) {
      DeviceAttributes d = ctx.queryDevice();
      System.out.println("device attributes: " + d);
      assertTrue(d.maxQp() > 0 && d.maxCqe() > 0 && d.maxSge() > 0, d.toString());
      assertTrue(d.physPortCnt() >= 1, d.toString());
      PortAttributes p = ctx.queryPort(PORT);
      System.out.println("port 1: " + p);
      assertEquals(PortState.ACTIVE, p.state());
      Gid gid = ctx.queryGid(PORT, GID_INDEX);
      System.out.println("GID " + GID_INDEX + ": " + gid + " (" + gid.toInetAddress() + ")");
      assertTrue(!gid.isZero());
      for (RdmaProvider.Feature f : RdmaProvider.Feature.values()) {
        System.out.println("supports(" + f + ") = " + provider.supports(f));
      }
    }
  }

  @Test
  @Order(2)
  void sendRecvWriteReadAtomicsBetweenTwoRcQps() throws Exception {
    ResourceCounts before = provider.liveResources();
    try (Pair p = new Pair(provider)) {
      assertEquals(QpState.RTS, p.a.state());
      QpAttributes q = p.a.query();
      assertEquals(p.b.qpNum(), q.destQpNum());
      System.out.println("QP " + p.a.qpNum() + " <-> QP " + p.b.qpNum() + ", caps "
          + p.a.capabilities() + ", path MTU " + q.pathMtu());
      ResourceCounts live = provider.liveResources().minus(before);
      assertEquals(new ResourceCounts(1, 1, 2, 0, 2, 2, 0, 0, 0), live);
      Map<String, Integer> during = rdmaResources(DEVICE);
      System.out.println("rdma resource show " + DEVICE + " while open: " + during);
      assertEquals(baseline.get("qp") + 2, during.get("qp"));
      assertEquals(baseline.get("pd") + 1, during.get("pd"));
      assertEquals(baseline.get("cq") + 2, during.get("cq"));
      assertEquals(baseline.get("mr") + 2, during.get("mr"));

      // an illegal transition is refused before the driver sees it
      IllegalQpTransitionException ill = assertThrows(IllegalQpTransitionException.class,
          () -> p.a.modify(new QpAttributes().state(QpState.INIT)));
      assertEquals(QpState.RTS, ill.from());
      assertEquals(QpState.INIT, ill.to());

      byte[] m1 = "hello over rxe".getBytes(StandardCharsets.US_ASCII);
      byte[] m2 = "second in batch".getBytes(StandardCharsets.US_ASCII);
      p.bufA.put(0, m1, 0, m1.length);
      p.bufA.put(64, m2, 0, m2.length);

      // SEND/RECV: two receives and two sends, each posted as one linked batch
      try (RecvRequests rr = new RecvRequests(4, 1); SendRequests sr = new SendRequests(4, 2)) {
        rr.add(11).sge(p.mrB, 0, 64).add(12).sge(p.mrB, 64, 64);
        p.b.postRecv(rr);
        p.cqB.requestNotify(false);
        sr.add(1, WrOpcode.SEND, SendRequests.SIGNALED).sge(p.mrA, 0, m1.length);
        sr.add(2, WrOpcode.SEND_WITH_IMM, SendRequests.SIGNALED).sge(p.mrA, 64, m2.length)
            .immediate(0x01020304);
        p.a.postSend(sr);
        assertEquals(2, await(p.cqA, p.wc, 2));
        // the receiver waits on its completion channel (poll(2) on the fd)
        CompletionQueue fired = p.channel.awaitEvent(Duration.ofSeconds(10));
        assertSame(p.cqB, fired);
        p.channel.ackEvents(fired, 1);
        int got = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        boolean sawImm = false;
        while (got < 2 && System.nanoTime() < deadline) {
          int k = p.cqB.poll(p.wc);
          for (int i = 0; i < k; i++) {
            System.out.println("  " + p.wc.describe(i));
            assertEquals(WcOpcode.RECV, p.wc.opcode(i));
            assertEquals(WcStatus.SUCCESS, p.wc.status(i));
            if (p.wc.wrId(i) == 12) {
              assertTrue(p.wc.hasImmediate(i));
              assertEquals(0x01020304, p.wc.immediate(i));
              assertEquals(m2.length, p.wc.byteLength(i));
              sawImm = true;
            }
          }
          got += k;
          if (k == 0) Thread.sleep(1);
        }
        assertEquals(2, got);
        assertTrue(sawImm);
        byte[] r = new byte[m1.length];
        p.bufB.get(0, r, 0, r.length);
        assertArrayEquals(m1, r);
        // nothing more is pending: an armed channel stays quiet
        p.cqB.requestNotify(false);
        assertNull(p.channel.awaitEvent(Duration.ofMillis(200)));

        // RDMA WRITE A -> B
        byte[] w = "written by RDMA WRITE".getBytes(StandardCharsets.US_ASCII);
        p.bufA.put(1024, w, 0, w.length);
        sr.clear();
        sr.add(3, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(p.mrA, 1024, w.length)
            .rdma(p.mrB.address() + 2048, p.mrB.rkey());
        p.a.postSend(sr);
        assertEquals(1, await(p.cqA, p.wc, 1));
        assertEquals(WcOpcode.RDMA_WRITE, p.wc.opcode(0));
        byte[] r2 = new byte[w.length];
        p.bufB.get(2048, r2, 0, r2.length);
        assertArrayEquals(w, r2);

        // RDMA READ B -> A
        byte[] src = "read back by RDMA READ".getBytes(StandardCharsets.US_ASCII);
        p.bufB.put(3072, src, 0, src.length);
        sr.clear();
        sr.add(4, WrOpcode.RDMA_READ, SendRequests.SIGNALED).sge(p.mrA, 3072, src.length)
            .rdma(p.mrB.address() + 3072, p.mrB.rkey());
        p.a.postSend(sr);
        assertEquals(1, await(p.cqA, p.wc, 1));
        assertEquals(WcOpcode.RDMA_READ, p.wc.opcode(0));
        byte[] r3 = new byte[src.length];
        p.bufA.get(3072, r3, 0, r3.length);
        assertArrayEquals(src, r3);

        // atomics on B's 8 bytes at 4096: fetch-and-add, then compare-and-swap
        p.bufB.putLong(4096, 40);
        sr.clear();
        sr.add(5, WrOpcode.ATOMIC_FETCH_AND_ADD, SendRequests.SIGNALED).sge(p.mrA, 4096, 8)
            .atomic(p.mrB.address() + 4096, p.mrB.rkey(), 2, 0);
        sr.add(6, WrOpcode.ATOMIC_CMP_AND_SWP, SendRequests.SIGNALED).sge(p.mrA, 4104, 8)
            .atomic(p.mrB.address() + 4096, p.mrB.rkey(), 42, 7);
        p.a.postSend(sr);
        assertEquals(2, await(p.cqA, p.wc, 2));
        assertEquals(40, p.bufA.getLong(4096), "fetch-and-add returns the old value");
        assertEquals(42, p.bufA.getLong(4104), "compare-and-swap returns the old value");
        assertEquals(7, p.bufB.getLong(4096), "40 + 2 = 42 was swapped for 7");

        // a bad request in a batch: the exception names it, the earlier one was posted
        sr.clear();
        sr.add(7, WrOpcode.SEND, SendRequests.SIGNALED).sge(p.mrA, 0, 8);
        sr.add(8, WrOpcode.SEND, 0).sge(p.mrA, 0, 8).sge(p.mrA, 8, 8);
        sr.add(9, WrOpcode.SEND, 0).sge(p.mrA, 0, 8);
        rr.clear();
        rr.add(13).sge(p.mrB, 0, 64);
        p.b.postRecv(rr);
        RdmaException bad = null;
        try (SendRequests tooMany = new SendRequests(2, 4)) {
          tooMany.add(20, WrOpcode.SEND, SendRequests.SIGNALED).sge(p.mrA, 0, 8);
          int sges = p.a.capabilities().maxSendSge() + 1;
          tooMany.add(21, WrOpcode.SEND, SendRequests.SIGNALED);
          for (int i = 0; i < Math.min(sges, 4); i++) tooMany.sge(p.mrA, 8L * i, 8);
          if (sges <= 4) {
            bad = assertThrows(RdmaException.class, () -> p.a.postSend(tooMany));
            System.out.println("bad batch: " + bad.getMessage());
            assertEquals("ibv_post_send", bad.verb());
            assertTrue(bad.getMessage().contains("request 1 of 2 (wr_id 21"), bad.getMessage());
            assertEquals(1, await(p.cqA, p.wc, 1), "request 0 was posted");
          } else {
            System.out.println("QP allows " + (sges - 1) + " SGEs: bad-batch check skipped");
          }
        }
      }
      // an RDMA WRITE with a wrong rkey fails remotely; the responder may report it async
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(30, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(p.mrA, 0, 8)
            .rdma(p.mrB.address(), p.mrB.rkey() ^ 0x5500);
        p.a.postSend(sr);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int k = 0;
        while (k == 0 && System.nanoTime() < deadline) {
          k = p.cqA.poll(p.wc);
          if (k == 0) Thread.sleep(1);
        }
        assertEquals(1, k);
        System.out.println("  bad rkey: " + p.wc.describe(0));
        assertEquals(WcStatus.REM_ACCESS_ERR, p.wc.status(0));
        assertEquals(QpState.ERR, p.a.state());
        AsyncEvent ev;
        while ((ev = p.ctx.nextAsyncEvent(Duration.ofSeconds(2))) != null) {
          System.out.println("  async event: " + ev);
        }
      }
    }
    assertEquals(before, provider.liveResources());
  }

  @Test
  @Order(3)
  void srqMemoryWindowsAddressHandleResizeRereg() throws Exception {
    try (Pair p = new Pair(provider)) {
      // CQ resize
      try {
        p.cqA.resize(200);
        System.out.println("resized CQ to " + p.cqA.capacity());
        assertTrue(p.cqA.capacity() >= 200);
      } catch (RdmaException e) {
        System.out.println("CQ resize: " + e.getMessage());
        throw e;
      }
      // MR re-registration
      try (OffHeapBuffer other = OffHeapBuffer.allocate(4096)) {
        try {
          p.mrA.reRegister(other.address(), 4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
          System.out.println("re-registered MR: " + p.mrA);
          assertEquals(other.address(), p.mrA.address());
          p.mrA.reRegister(p.bufA.address(), 8192, ALL);
          assertTrue(provider.supports(RdmaProvider.Feature.REREGISTER_MR));
        } catch (RdmaException e) {
          System.out.println("MR re-registration: " + e.getMessage());
          assertTrue(!provider.supports(RdmaProvider.Feature.REREGISTER_MR),
              "supports(REREGISTER_MR) says true but it failed");
        }
      }
      // SRQ
      try (SharedReceiveQueue srq = p.pd.createSrq(new SrqAttributes(64, 1, 0))) {
        System.out.println("SRQ: " + srq.query());
        srq.armLimit(4);
        try (RecvRequests rr = new RecvRequests(8, 1)) {
          for (int i = 0; i < 8; i++) rr.add(100 + i).sge(p.mrB, 64L * i, 64);
          srq.postRecv(rr);
        }
        CompletionQueue cq = p.ctx.createCq(16, null);
        QueuePair qp = p.pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).srq(srq));
        RdmaException busy = assertThrows(RdmaException.class, srq::close);
        assertEquals(RdmaException.EBUSY, busy.errno());
        qp.close();
        cq.close();
      }
      // memory windows
      for (MemoryWindow.Type t : MemoryWindow.Type.values()) {
        try (MemoryWindow mw = p.pd.allocMemoryWindow(t)) {
          System.out.println("allocated " + mw + " (supports: "
              + provider.supports(t == MemoryWindow.Type.TYPE_1
                  ? RdmaProvider.Feature.MEMORY_WINDOW_TYPE_1
                  : RdmaProvider.Feature.MEMORY_WINDOW_TYPE_2) + ")");
          if (t == MemoryWindow.Type.TYPE_1) {
            try (MemoryRegion bindable = p.pd.registerMemory(p.bufB.address(), 4096,
                ALL | Access.MW_BIND)) {
              int rkey = p.b.bindMemoryWindow(mw, 77, SendRequests.SIGNALED, bindable,
                  bindable.address(), 1024, Access.REMOTE_READ);
              System.out.println("bound type-1 window, rkey 0x" + Integer.toHexString(rkey));
              assertEquals(1, await(p.cqB, p.wc, 1));
              assertEquals(WcOpcode.BIND_MW, p.wc.opcode(0));
              RdmaException busy = assertThrows(RdmaException.class, bindable::close);
              assertEquals(RdmaException.EBUSY, busy.errno());
              readThroughWindow(p, bindable.address(), rkey, 79);
              p.b.bindMemoryWindow(mw, 78, SendRequests.SIGNALED, null, 0, 0, 0);
              assertEquals(1, await(p.cqB, p.wc, 1));
            }
          } else {
            try (MemoryRegion bindable = p.pd.registerMemory(p.bufB.address(), 4096,
                ALL | Access.MW_BIND); SendRequests sr = new SendRequests(1, 1)) {
              int rkey = MemoryWindow.nextRkey(mw.rkey());
              sr.add(80, WrOpcode.BIND_MW, SendRequests.SIGNALED)
                  .bindMw(mw, rkey, bindable, bindable.address(), 1024, Access.REMOTE_READ);
              p.b.postSend(sr);
              assertEquals(1, await(p.cqB, p.wc, 1));
              assertEquals(WcOpcode.BIND_MW, p.wc.opcode(0));
              System.out.println("bound type-2 window, rkey 0x" + Integer.toHexString(rkey)
                  + " (struct says 0x" + Integer.toHexString(mw.rkey()) + ")");
              readThroughWindow(p, bindable.address(), rkey, 81);
              sr.clear();
              sr.add(82, WrOpcode.LOCAL_INV, SendRequests.SIGNALED).invalidate(rkey);
              p.b.postSend(sr);
              assertEquals(1, await(p.cqB, p.wc, 1));
            }
          }
        } catch (RdmaException e) {
          System.out.println("memory window " + t + ": " + e.getMessage());
        }
      }
      // address handle
      try (AddressHandle ah = p.pd.createAddressHandle(
          AddressVector.global(p.ctx.queryGid(PORT, GID_INDEX), GID_INDEX, PORT))) {
        System.out.println("address handle 0x" + Long.toHexString(ah.handle()));
        assertTrue(ah.handle() != 0);
      }
      // closing out of order is refused, naming what is still open
      RdmaException busy = assertThrows(RdmaException.class, p.pd::close);
      assertEquals(RdmaException.EBUSY, busy.errno());
      System.out.println("PD close while in use: " + busy.getMessage());
      assertNotNull(busy.getMessage());
    }
  }

  /** A reads 16 bytes of B's memory through a window's rkey. */
  static void readThroughWindow(Pair p, long address, int rkey, long wrId) throws Exception {
    byte[] src = "through a window".getBytes(StandardCharsets.US_ASCII);
    p.bufB.put(address - p.bufB.address(), src, 0, src.length);
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(wrId, WrOpcode.RDMA_READ, SendRequests.SIGNALED).sge(p.mrA, 5000, src.length)
          .rdma(address, rkey);
      p.a.postSend(sr);
      assertEquals(1, await(p.cqA, p.wc, 1));
    }
    byte[] r = new byte[src.length];
    p.bufA.get(5000, r, 0, r.length);
    assertArrayEquals(src, r);
    System.out.println("  read through window rkey 0x" + Integer.toHexString(rkey) + ": ok");
  }

  /**
   * The kernel's counts are back where they were; librdmacm, once used in this JVM, keeps device
   * contexts (and their PDs) of its own open, so then ctx and pd may be higher.
   */
  static void assertBackTo(Map<String, Integer> before, Map<String, Integer> after) {
    Map<String, Integer> b = new HashMap<>(before);
    Map<String, Integer> a = new HashMap<>(after);
    if (Verbs.cmUsed()) {
      System.out.println("librdmacm was used: not comparing ctx and pd (" + before + " -> " + after + ")");
      for (String k : new String[] {"ctx", "pd"}) {
        b.remove(k);
        a.remove(k);
      }
    }
    assertEquals(b, a, "the kernel's resource counts are back where they were");
  }

  /** Counts of {@code rdma resource show} for one device: pd, cq, qp, cm_id, mr, ctx, srq. */
  static Map<String, Integer> rdmaResources(String device) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("rdma", "resource", "show").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), out);
    for (String line : out.split("\n")) {
      String[] t = line.trim().split("\\s+");
      if (t.length > 2 && t[1].equals(device + ":")) {
        Map<String, Integer> m = new HashMap<>();
        for (int i = 2; i + 1 < t.length; i += 2) m.put(t[i], Integer.parseInt(t[i + 1]));
        return m;
      }
    }
    throw new AssertionError("no line for " + device + " in rdma resource show:\n" + out);
  }
}
