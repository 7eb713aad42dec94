package dev.pekkordma.conformance;

import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SharedReceiveQueue;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Two QPs of one PD on the shared device, connected to each other by hand (RESET -> INIT -> RTR
 * -> RTS): A is the requester of most tests, B the responder. Each has its own send and receive
 * CQ. Closes everything it created, in reverse order.
 */
public final class RcPair implements AutoCloseable {
  public final ConformanceProvider fx;
  public final ProtectionDomain pd;
  public final CompletionQueue aSendCq;
  public final CompletionQueue aRecvCq;
  public final CompletionQueue bSendCq;
  public final CompletionQueue bRecvCq;
  public final QueuePair a;
  public final QueuePair b;
  private final Deque<AutoCloseable> owned = new ArrayDeque<>();
  private boolean aClosed;
  private boolean bClosed;

  private RcPair(Builder o, ConformanceProvider fx) {
    this.fx = fx;
    try {
      pd = o.pd != null ? o.pd : own(fx.context.allocPd());
      aSendCq = o.aSendCq != null ? o.aSendCq : own(fx.context.createCq(o.cqSize, o.channel));
      aRecvCq = o.aRecvCq != null ? o.aRecvCq : own(fx.context.createCq(o.cqSize, o.channel));
      bSendCq = o.bSendCq != null ? o.bSendCq : own(fx.context.createCq(o.cqSize, o.channel));
      bRecvCq = o.bRecvCq != null ? o.bRecvCq : own(fx.context.createCq(o.cqSize, o.channel));
      a = own(pd.createQp(init(o, aSendCq, aRecvCq, null)));
      b = own(pd.createQp(init(o, bSendCq, bRecvCq, o.bSrq)));
      o.aLink.bringUp(a, fx.attributes, fx.port, fx.loopback(), b.qpNum(), o.bLink.sqPsn,
          fx.mtu());
      o.bLink.bringUp(b, fx.attributes, fx.port, fx.loopback(), a.qpNum(), o.aLink.sqPsn,
          fx.mtu());
    } catch (RuntimeException | Error e) {
      try {
        closeOwned();
      } catch (RuntimeException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  private static QpInitAttributes init(Builder o, CompletionQueue send, CompletionQueue recv,
      SharedReceiveQueue srq) {
    return QpInitAttributes.of(o.type, send, recv).srq(srq).maxSendWr(o.maxSendWr)
        .maxRecvWr(o.maxRecvWr).maxSendSge(o.maxSge).maxRecvSge(o.maxSge)
        .maxInlineData(o.maxInline).signalAll(o.signalAll);
  }

  private <T extends AutoCloseable> T own(T t) {
    owned.push(t);
    return t;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A connected pair with the defaults. */
  public static RcPair open(ConformanceProvider fx) {
    return builder().build(fx);
  }

  /** Destroys B now (for tests of a vanished peer); close() will not close it again. */
  public void closeB() {
    if (!bClosed) {
      bClosed = true;
      owned.remove(b);
      b.close();
    }
  }

  /** Destroys A now; close() will not close it again. */
  public void closeA() {
    if (!aClosed) {
      aClosed = true;
      owned.remove(a);
      a.close();
    }
  }

  private void closeOwned() {
    RuntimeException first = null;
    while (!owned.isEmpty()) {
      AutoCloseable c = owned.pop();
      try {
        c.close();
      } catch (Exception e) {
        RuntimeException r = e instanceof RuntimeException ? (RuntimeException) e
            : new RuntimeException(e);
        if (first == null) first = r; else first.addSuppressed(r);
      }
    }
    if (first != null) throw first;
  }

  @Override
  public void close() {
    closeOwned();
  }

  /** Options; everything not set is the suite's default. */
  public static final class Builder {
    QpType type = QpType.RC;
    ProtectionDomain pd;
    CompletionQueue aSendCq;
    CompletionQueue aRecvCq;
    CompletionQueue bSendCq;
    CompletionQueue bRecvCq;
    CompletionChannel channel;
    SharedReceiveQueue bSrq;
    int cqSize = 64;
    int maxSendWr = 32;
    int maxRecvWr = 32;
    int maxSge = 1;
    int maxInline = 0;
    boolean signalAll = false;
    Link aLink = Link.defaults().sqPsn(0x1000);
    Link bLink = Link.defaults().sqPsn(0x2000);

    public Builder type(QpType t) { type = t; return this; }
    public Builder pd(ProtectionDomain p) { pd = p; return this; }
    public Builder aCqs(CompletionQueue send, CompletionQueue recv) { aSendCq = send; aRecvCq = recv; return this; }
    public Builder bCqs(CompletionQueue send, CompletionQueue recv) { bSendCq = send; bRecvCq = recv; return this; }
    public Builder channel(CompletionChannel c) { channel = c; return this; }
    public Builder bSrq(SharedReceiveQueue s) { bSrq = s; return this; }
    public Builder cqSize(int n) { cqSize = n; return this; }
    public Builder maxSendWr(int n) { maxSendWr = n; return this; }
    public Builder maxRecvWr(int n) { maxRecvWr = n; return this; }
    public Builder maxSge(int n) { maxSge = n; return this; }
    public Builder maxInline(int n) { maxInline = n; return this; }
    public Builder signalAll(boolean b) { signalAll = b; return this; }
    public Builder a(Link l) { aLink = l; return this; }
    public Builder b(Link l) { bLink = l; return this; }
    public Link aLink() { return aLink; }
    public Link bLink() { return bLink; }

    public RcPair build(ConformanceProvider fx) {
      return new RcPair(this, fx);
    }
  }
}
