package dev.pekkordma.verbs;

/** Queue pair transport types, with libibverbs' {@code ibv_qp_type} codes. */
public enum QpType {
  RC(2), UC(3), UD(4);

  public final int code;

  QpType(int code) {
    this.code = code;
  }

  /**
   * Whether a QP of this type takes {@code op}: the one table both providers check at post,
   * libibverbs' (ibv_post_send(3)). UD sends only; UC everything but RDMA READ and atomics.
   */
  public boolean allows(WrOpcode op) {
    return switch (this) {
      case UD -> op == WrOpcode.SEND || op == WrOpcode.SEND_WITH_IMM;
      case UC -> op != WrOpcode.RDMA_READ && !op.isAtomic();
      case RC -> true;
    };
  }

  public static QpType of(int code) {
    for (QpType t : values()) if (t.code == code) return t;
    throw new IllegalArgumentException("unknown QP type code " + code);
  }
}
