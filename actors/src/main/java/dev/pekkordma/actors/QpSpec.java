package dev.pekkordma.actors;

import dev.pekkordma.verbs.QpType;

/**
 * What a QP actor creates: the QP's type and queue sizes, its CQ's size (0 takes {@code
 * pekko-rdma.actors.qp.cq-size}), and whether QP_FATAL makes a new QP (with the backoff of
 * {@code pekko-rdma.actors.qp.restart-backoff}) instead of leaving the actor in ERR.
 */
public record QpSpec(QpType type, int maxSendWr, int maxRecvWr, int maxInlineData, int cqSize,
    boolean restartOnFatal) {

  public QpSpec {
    if (type == null) throw new IllegalArgumentException("type is null");
    if (maxSendWr < 1 || maxRecvWr < 1) {
      throw new IllegalArgumentException("maxSendWr and maxRecvWr must be positive: "
          + maxSendWr + ", " + maxRecvWr);
    }
    if (cqSize < 0) throw new IllegalArgumentException("cqSize must be >= 0: " + cqSize);
  }

  /** An RC QP with 64 send and 64 receive requests. */
  public static QpSpec rc() {
    return new QpSpec(QpType.RC, 64, 64, 0, 0, false);
  }

  public static QpSpec of(QpType type) {
    return new QpSpec(type, 64, 64, 0, 0, false);
  }

  public QpSpec withQueues(int sendWr, int recvWr) {
    return new QpSpec(type, sendWr, recvWr, maxInlineData, cqSize, restartOnFatal);
  }

  public QpSpec withCqSize(int n) {
    return new QpSpec(type, maxSendWr, maxRecvWr, maxInlineData, n, restartOnFatal);
  }

  public QpSpec withRestartOnFatal(boolean b) {
    return new QpSpec(type, maxSendWr, maxRecvWr, maxInlineData, cqSize, b);
  }
}
