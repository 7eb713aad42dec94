package dev.pekkordma.verbs;

/** What a QP is created with ({@code ibv_qp_init_attr}); a builder. */
public final class QpInitAttributes {
  private QpType type = QpType.RC;
  private CompletionQueue sendCq;
  private CompletionQueue recvCq;
  private SharedReceiveQueue srq;
  private int maxSendWr = 16;
  private int maxRecvWr = 16;
  private int maxSendSge = 1;
  private int maxRecvSge = 1;
  private int maxInlineData = 0;
  private boolean signalAll = false;

  public static QpInitAttributes of(QpType type, CompletionQueue sendCq, CompletionQueue recvCq) {
    return new QpInitAttributes().type(type).sendCq(sendCq).recvCq(recvCq);
  }

  public QpInitAttributes type(QpType t) { this.type = t; return this; }
  public QpInitAttributes sendCq(CompletionQueue cq) { this.sendCq = cq; return this; }
  public QpInitAttributes recvCq(CompletionQueue cq) { this.recvCq = cq; return this; }
  public QpInitAttributes srq(SharedReceiveQueue s) { this.srq = s; return this; }
  public QpInitAttributes maxSendWr(int n) { this.maxSendWr = n; return this; }
  public QpInitAttributes maxRecvWr(int n) { this.maxRecvWr = n; return this; }
  public QpInitAttributes maxSendSge(int n) { this.maxSendSge = n; return this; }
  public QpInitAttributes maxRecvSge(int n) { this.maxRecvSge = n; return this; }
  public QpInitAttributes maxInlineData(int n) { this.maxInlineData = n; return this; }
  public QpInitAttributes signalAll(boolean b) { this.signalAll = b; return this; }

  public QpType type() { return type; }
  public CompletionQueue sendCq() { return sendCq; }
  public CompletionQueue recvCq() { return recvCq; }
  public SharedReceiveQueue srq() { return srq; }
  public int maxSendWr() { return maxSendWr; }
  public int maxRecvWr() { return maxRecvWr; }
  public int maxSendSge() { return maxSendSge; }
  public int maxRecvSge() { return maxRecvSge; }
  public int maxInlineData() { return maxInlineData; }
  public boolean signalAll() { return signalAll; }

  /** Checks against the device's limits; the message names the field and the limit. */
  public void validate(DeviceAttributes dev) {
    if (type == null) throw invalid("type is null");
    if (sendCq == null) throw invalid("sendCq is null");
    if (recvCq == null) throw invalid("recvCq is null");
    check("maxSendWr", maxSendWr, 1, dev.maxQpWr());
    if (srq == null) {
      check("maxRecvWr", maxRecvWr, 1, dev.maxQpWr());
      check("maxRecvSge", maxRecvSge, 1, dev.maxSge());
    }
    check("maxSendSge", maxSendSge, 1, dev.maxSge());
    check("maxInlineData", maxInlineData, 0, dev.maxInlineData());
  }

  private static void check(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw invalid(name + " = " + value + " is outside [" + min + ", " + max + "]");
    }
  }

  private static RdmaException invalid(String what) {
    return new RdmaException("ibv_create_qp", RdmaException.EINVAL, what);
  }
}
