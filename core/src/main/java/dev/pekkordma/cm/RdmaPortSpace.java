package dev.pekkordma.cm;

import dev.pekkordma.verbs.QpType;

/**
 * The port space of a CM id ({@code enum rdma_port_space}): what kind of communication it
 * serves, and so the QP it takes. TCP ids connect reliable (RC) QPs; UDP ids serve unreliable
 * datagram (UD) QPs, their connect is a SIDR exchange that yields the peer's QP number and
 * Q_Key, and they join multicast groups; IB ids take either. The software provider serves TCP
 * and UDP; IB (AF_IB addressing) and IPOIB (whose groups and Q_Keys an InfiniBand subnet manager
 * gives) it refuses with EPROTONOSUPPORT naming the space.
 */
public enum RdmaPortSpace {
  IPOIB(0x0002, QpType.UD),
  TCP(0x0106, QpType.RC),
  UDP(0x0111, QpType.UD),
  IB(0x013F, null);

  /** librdmacm's code. */
  public final int code;
  private final QpType qpType; // null: any

  RdmaPortSpace(int code, QpType qpType) {
    this.code = code;
    this.qpType = qpType;
  }

  /** Whether an id of this space may create a QP of {@code type}. */
  public boolean takes(QpType type) {
    return qpType == null ? type == QpType.RC || type == QpType.UD : qpType == type;
  }

  /** Whether the space's connect is a SIDR exchange (datagram ids). */
  public boolean datagram() {
    return qpType == QpType.UD;
  }
}
