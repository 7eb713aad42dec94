package dev.pekkordma.conformance;

import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;

/**
 * How one side of an RC (or UC) connection is brought up by hand: RESET -> INIT -> RTR -> RTS,
 * stopping at {@link #target}. A mutable builder with the suite's defaults.
 */
public final class Link {
  public static final int ALL_REMOTE =
      Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

  int access = ALL_REMOTE;
  int timeout = 14;
  int retryCount = 7;
  int rnrRetry = 7;
  int minRnrTimer = 1; // 0.01 ms (0 would mean 655 ms)
  int sqPsn;
  QpState target = QpState.RTS;

  public static Link defaults() {
    return new Link();
  }

  public Link access(int a) { access = a; return this; }
  public Link timeout(int t) { timeout = t; return this; }
  public Link retryCount(int r) { retryCount = r; return this; }
  public Link rnrRetry(int r) { rnrRetry = r; return this; }
  public Link minRnrTimer(int t) { minRnrTimer = t; return this; }
  public Link sqPsn(int p) { sqPsn = p & 0xffffff; return this; }
  public Link target(QpState s) { target = s; return this; }

  /** Short timeouts for tests that expect a retry or RNR failure. */
  public Link failFast() {
    return timeout(8).retryCount(1).rnrRetry(1).minRnrTimer(1);
  }

  /**
   * Brings {@code qp} (in RESET, or already in INIT) up to {@link #target}, talking to {@code remoteQpn} at {@code
   * av}, which sends starting at {@code remoteSqPsn}.
   */
  public void bringUp(QueuePair qp, DeviceAttributes dev, int port, AddressVector av,
      int remoteQpn, int remoteSqPsn, Mtu mtu) {
    if (target == QpState.RESET) return;
    if (qp.state() == QpState.RESET) qp.modify(QpAttributes.toInit(port, access));
    if (target == QpState.INIT) return;
    boolean rc = qp.type() == QpType.RC;
    QpAttributes rtr = new QpAttributes().state(QpState.RTR).addressVector(av)
        .destQpNum(remoteQpn).rqPsn(remoteSqPsn & 0xffffff).pathMtu(mtu);
    if (rc) rtr.maxDestRdAtomic(rdAtomic(dev.maxQpRdAtom())).minRnrTimer(minRnrTimer);
    qp.modify(rtr);
    if (target == QpState.RTR) return;
    QpAttributes rts = new QpAttributes().state(QpState.RTS).sqPsn(sqPsn);
    if (rc) {
      rts.timeout(timeout).retryCount(retryCount).rnrRetry(rnrRetry)
          .maxRdAtomic(rdAtomic(dev.maxQpInitRdAtom()));
    }
    qp.modify(rts);
  }

  static int rdAtomic(int deviceMax) {
    return Math.max(1, Math.min(16, deviceMax));
  }
}
