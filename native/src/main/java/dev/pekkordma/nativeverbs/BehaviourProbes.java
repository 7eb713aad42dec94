package dev.pekkordma.nativeverbs;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.SharedReceiveQueue;
import dev.pekkordma.verbs.SrqAttributes;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Device behaviours found by experiment ({@link Feature#isBehaviour()}): each probe opens what it
 * needs on a context of its own (so its async events reach nobody else), connects two RC QPs of
 * the device to each other by hand, does the one thing, watches what happens, and closes all.
 * A probe that fails for another reason answers false and says why on stderr.
 */
final class BehaviourProbes {
  private static final Logger log = LoggerFactory.getLogger(BehaviourProbes.class);
  private static final Duration WAIT = Duration.ofSeconds(2);
  private static final Duration QUIET = Duration.ofMillis(500);
  private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
      | Access.REMOTE_ATOMIC | Access.MW_BIND;

  private BehaviourProbes() {}

  static boolean probe(DeviceContext ctx, Feature f) {
    try (Rig r = new Rig(ctx, f == Feature.LAST_WQE_REACHED_EVENT,
        f == Feature.COMM_EST_EVENT ? QpState.RTR : QpState.RTS,
        f == Feature.CQ_OVERRUN_ERROR ? 2 : 64)) {
      return switch (f) {
        case COMM_EST_EVENT -> {
          r.recv(r.b, 1, 0, 64);
          r.send(r.a, 2, r.mr.lkey(), 32, null);
          r.await(r.bRecv, 1);
          yield r.event(AsyncEventType.COMM_EST, r.b, WAIT);
        }
        case QP_ACCESS_ERR_EVENT -> {
          r.write(r.a, 1, 0, 64, r.mr.address(), r.mr.rkey() ^ 0x00ffff00);
          r.await(r.aSend, 1);
          yield r.event(AsyncEventType.QP_ACCESS_ERR, r.b, WAIT);
        }
        case LAST_WQE_REACHED_EVENT -> {
          r.b.modify(new QpAttributes().state(QpState.ERR));
          yield r.event(AsyncEventType.QP_LAST_WQE_REACHED, r.b, WAIT);
        }
        case SQ_DRAINED_ONLY_ON_REQUEST -> {
          r.a.modify(new QpAttributes().state(QpState.SQD));
          yield !r.event(AsyncEventType.SQ_DRAINED, r.a, QUIET);
        }
        case SQD_RESUMES_POSTED_WORK -> {
          r.a.modify(new QpAttributes().state(QpState.SQD).sqdAsyncNotify(true));
          r.event(AsyncEventType.SQ_DRAINED, r.a, QUIET);
          r.write(r.a, 1, 0, 64, (r.mr.address() + 1024), r.mr.rkey());
          r.a.modify(new QpAttributes().state(QpState.RTS));
          yield r.poll(r.aSend, 1, WAIT) != null;
        }
        case WORK_QUEUE_LIMITS -> {
          // B goes back to RESET: A's writes to it are retried, so they stay on A's queue
          r.b.modify(new QpAttributes().state(QpState.RESET));
          int sends = r.a.capabilities().maxSendWr();
          boolean sendRefused = false;
          for (int i = 0; i <= sends && !sendRefused; i++) {
            try {
              r.write(r.a, i, 0, 8, r.mr.address(), r.mr.rkey());
            } catch (RdmaException e) {
              sendRefused = i == sends;
              if (!sendRefused) throw e;
            }
          }
          int recvs = r.b.capabilities().maxRecvWr();
          boolean recvRefused = false;
          r.b.modify(QpAttributes.toInit(r.port, ALL));
          for (int i = 0; i <= recvs && !recvRefused; i++) {
            try {
              r.recv(r.b, i, 0, 8);
            } catch (RdmaException e) {
              recvRefused = i == recvs;
              if (!recvRefused) throw e;
            }
          }
          yield sendRefused && recvRefused;
        }
        case CQ_OVERRUN_ERROR -> {
          int n = r.aSend.capacity() + 2;
          for (int i = 0; i < n; i++) r.write(r.a, i, 0, 8, r.mr.address(), r.mr.rkey());
          r.event(AsyncEventType.CQ_ERR, null, WAIT);
          try (WorkCompletions wcs = new WorkCompletions(n)) {
            r.aSend.poll(wcs);
            yield false;
          } catch (RdmaException e) {
            yield true;
          }
        }
        case LOCAL_ERROR_STATUSES -> {
          r.send(r.a, 1, r.mr.lkey() ^ 0x00ffff00, 32, null);
          yield r.await(r.aSend, 1) == WcStatus.LOC_PROT_ERR;
        }
        case FLUSHES_RECV_POSTED_IN_ERR -> {
          r.b.modify(new QpAttributes().state(QpState.ERR));
          r.recv(r.b, 7, 0, 64);
          yield r.poll(r.bRecv, 7, WAIT) == WcStatus.WR_FLUSH_ERR;
        }
        case MEMORY_WINDOW_BOUNDS -> {
          MemoryWindow mw = r.pd.allocMemoryWindow(MemoryWindow.Type.TYPE_1);
          try {
            int rkey = r.b.bindMemoryWindow(mw, 1, SendRequests.SIGNALED, r.mr,
                (r.mr.address() + 2048), 256, Access.REMOTE_WRITE | Access.REMOTE_READ);
            r.await(r.bSend, 1);
            r.write(r.a, 2, 0, 64, (r.mr.address() + 2048 + 256 - 32), rkey);
            WcStatus s = r.await(r.aSend, 2);
            yield s == WcStatus.REM_ACCESS_ERR;
          } finally {
            r.b.modify(new QpAttributes().state(QpState.ERR));
            r.a.modify(new QpAttributes().state(QpState.ERR));
            mw.close();
          }
        }
        case WC_WITH_INV_FLAG -> {
          MemoryWindow mw = r.pd.allocMemoryWindow(MemoryWindow.Type.TYPE_2);
          try {
            int rkey = MemoryWindow.nextRkey(mw.rkey());
            try (SendRequests sr = new SendRequests(1, 1)) {
              sr.add(1, WrOpcode.BIND_MW, SendRequests.SIGNALED)
                  .bindMw(mw, rkey, r.mr, (r.mr.address() + 2048), 256, Access.REMOTE_READ);
              r.b.postSend(sr);
            }
            r.await(r.bSend, 1);
            r.recv(r.b, 3, 0, 64);
            r.send(r.a, 2, r.mr.lkey(), 16, rkey);
            r.await(r.bRecv, 3);
            yield (r.lastFlags & WorkCompletions.FLAG_WITH_INV) != 0;
          } finally {
            r.b.modify(new QpAttributes().state(QpState.ERR));
            r.a.modify(new QpAttributes().state(QpState.ERR));
            mw.close();
          }
        }
        default -> throw new IllegalArgumentException(f + " is not a device behaviour");
      };
    } catch (RuntimeException e) {
      log.warn("probe of {} on {} failed: {}", f, ctx.device().name(), e.toString());
      return false;
    }
  }

  /** Two RC QPs of one device, A (RTS) to B (bTarget), each with its own send and recv CQ. */
  private static final class Rig implements AutoCloseable {
    final DeviceContext ctx;
    final ProtectionDomain pd;
    final MemoryRegion mr;
    final long mem;
    final CompletionQueue aSend, aRecv, bSend, bRecv;
    final SharedReceiveQueue srq;
    final QueuePair a, b;
    final int port;
    int lastFlags;
    private final List<AutoCloseable> opened = new ArrayList<>();

    Rig(DeviceContext ctx, boolean withSrq, QpState bTarget, int sendCqe) {
      this.ctx = ctx;
      boolean ok = false;
      long m = NativeMemory.allocate(4096);
      mem = m;
      try {
        pd = own(ctx.allocPd());
        mr = own(pd.registerMemory(mem, 4096, ALL));
        aSend = own(ctx.createCq(sendCqe, null));
        aRecv = own(ctx.createCq(64, null));
        bSend = own(ctx.createCq(64, null));
        bRecv = own(ctx.createCq(64, null));
        srq = withSrq ? own(pd.createSrq(new SrqAttributes(16, 1, 0))) : null;
        a = own(pd.createQp(QpInitAttributes.of(QpType.RC, aSend, aRecv).maxSendWr(16)
            .maxRecvWr(16)));
        b = own(pd.createQp(QpInitAttributes.of(QpType.RC, bSend, bRecv).srq(srq).maxSendWr(16)
            .maxRecvWr(16)));
        DeviceAttributes dev = ctx.queryDevice();
        int p = 1;
        for (int i = 1; i <= Math.max(1, dev.physPortCnt()); i++) {
          if (ctx.queryPort(i).state() == PortState.ACTIVE) {
            p = i;
            break;
          }
        }
        port = p;
        PortAttributes pa = ctx.queryPort(port);
        int gidIndex = gidIndex(ctx, port, pa.gidTableLength());
        Gid gid = ctx.queryGid(port, gidIndex);
        AddressVector av = new AddressVector(pa.lid(), 0, port, true, gid, gidIndex, 64, 0, 0);
        Mtu mtu = pa.activeMtu() != null ? pa.activeMtu() : Mtu.MTU_1024;
        up(a, dev, av, b.qpNum(), mtu, QpState.RTS);
        up(b, dev, av, a.qpNum(), mtu, bTarget);
        ok = true;
      } finally {
        if (!ok) close();
      }
    }

    private <T extends AutoCloseable> T own(T t) {
      opened.add(t);
      return t;
    }

    /** The first IPv4-mapped GID (RoCE v2 over rxe), else the first non-zero one. */
    private static int gidIndex(DeviceContext ctx, int port, int len) {
      int first = -1;
      for (int i = 0; i < Math.min(16, Math.max(1, len)); i++) {
        Gid g;
        try {
          g = ctx.queryGid(port, i);
        } catch (RuntimeException e) {
          continue;
        }
        if (g == null || g.isZero()) continue;
        if (first < 0) first = i;
        boolean mapped = g.byteAt(10) == (byte) 0xff && g.byteAt(11) == (byte) 0xff;
        for (int k = 0; k < 10 && mapped; k++) mapped = g.byteAt(k) == 0;
        if (mapped) return i;
      }
      if (first < 0) throw new IllegalStateException("no non-zero GID on port " + port);
      return first;
    }

    private void up(QueuePair qp, DeviceAttributes dev, AddressVector av, int remote, Mtu mtu,
        QpState target) {
      qp.modify(QpAttributes.toInit(port, ALL));
      qp.modify(new QpAttributes().state(QpState.RTR).addressVector(av).destQpNum(remote)
          .rqPsn(0).pathMtu(mtu).maxDestRdAtomic(Math.max(1, Math.min(16, dev.maxQpRdAtom())))
          .minRnrTimer(1));
      if (target == QpState.RTR) return;
      qp.modify(new QpAttributes().state(QpState.RTS).sqPsn(0).timeout(14).retryCount(7)
          .rnrRetry(7).maxRdAtomic(Math.max(1, Math.min(16, dev.maxQpInitRdAtom()))));
    }

    void recv(QueuePair qp, long wrId, long offset, int len) {
      try (RecvRequests rr = new RecvRequests(1, 1)) {
        rr.add(wrId).sge(mr, offset, len);
        if (qp == b && srq != null) srq.postRecv(rr);
        else qp.postRecv(rr);
      }
    }

    void send(QueuePair qp, long wrId, int lkey, int len, Integer invalidate) {
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(wrId, invalidate == null ? WrOpcode.SEND : WrOpcode.SEND_WITH_INV,
            SendRequests.SIGNALED).sge(mr.address() + 512, len, lkey);
        if (invalidate != null) sr.invalidate(invalidate);
        qp.postSend(sr);
      }
    }

    void write(QueuePair qp, long wrId, long offset, int len, long remote, int rkey) {
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(wrId, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, offset, len)
            .rdma(remote, rkey);
        qp.postSend(sr);
      }
    }

    /** The status of {@code wrId}'s completion, or null when none came within {@code t}. */
    WcStatus poll(CompletionQueue cq, long wrId, Duration t) {
      long deadline = System.nanoTime() + t.toNanos();
      try (WorkCompletions wcs = new WorkCompletions(16)) {
        while (System.nanoTime() < deadline) {
          int n = cq.poll(wcs);
          for (int i = 0; i < n; i++) {
            if (wcs.wrId(i) == wrId) {
              lastFlags = wcs.flags(i);
              return wcs.status(i);
            }
          }
          if (n == 0) sleep(1);
        }
      }
      return null;
    }

    WcStatus await(CompletionQueue cq, long wrId) {
      WcStatus s = poll(cq, wrId, WAIT);
      if (s == null) throw new IllegalStateException("no completion of " + wrId + " in " + WAIT);
      return s;
    }

    /** Whether {@code type} (on {@code qp}, when given) came within {@code t}. */
    boolean event(AsyncEventType type, QueuePair qp, Duration t) {
      long deadline = System.nanoTime() + t.toNanos();
      while (true) {
        long left = deadline - System.nanoTime();
        if (left <= 0) return false;
        AsyncEvent e = ctx.nextAsyncEvent(Duration.ofNanos(left));
        if (e != null && e.type() == type
            && (qp == null || (e.qp() != null && e.qp().qpNum() == qp.qpNum()))) {
          return true;
        }
      }
    }

    @Override
    public void close() {
      for (int i = opened.size() - 1; i >= 0; i--) {
        try {
          opened.get(i).close();
        } catch (Exception e) {
          log.warn("probe cleanup: {}", e.toString());
        }
      }
      NativeMemory.free(mem);
    }

    private static void sleep(long ms) {
      try {
        Thread.sleep(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
