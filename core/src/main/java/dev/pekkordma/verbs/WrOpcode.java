package dev.pekkordma.verbs;

/** Send work request opcodes, with libibverbs' {@code ibv_wr_opcode} codes. */
public enum WrOpcode {
  RDMA_WRITE(0), RDMA_WRITE_WITH_IMM(1), SEND(2), SEND_WITH_IMM(3), RDMA_READ(4),
  ATOMIC_CMP_AND_SWP(5), ATOMIC_FETCH_AND_ADD(6), LOCAL_INV(7), BIND_MW(8), SEND_WITH_INV(9);

  public final int code;
  private static final WrOpcode[] BY_CODE = values();

  WrOpcode(int code) {
    this.code = code;
  }

  public static WrOpcode of(int code) {
    if (code < 0 || code >= BY_CODE.length) {
      throw new IllegalArgumentException("unknown work request opcode " + code);
    }
    return BY_CODE[code];
  }

  public boolean isAtomic() {
    return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
  }

  public boolean isSend() {
    return this == SEND || this == SEND_WITH_IMM || this == SEND_WITH_INV;
  }

  public boolean hasImmediate() {
    return this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
  }
}
