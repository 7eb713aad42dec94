package dev.pekkordma.verbs;

/** Work completion opcodes, with libibverbs' {@code ibv_wc_opcode} codes. */
public enum WcOpcode {
  SEND(0), RDMA_WRITE(1), RDMA_READ(2), COMP_SWAP(3), FETCH_ADD(4), BIND_MW(5), LOCAL_INV(6),
  RECV(128), RECV_RDMA_WITH_IMM(129);

  public final int code;

  WcOpcode(int code) {
    this.code = code;
  }

  public static WcOpcode of(int code) {
    switch (code) {
      case 0: return SEND;
      case 1: return RDMA_WRITE;
      case 2: return RDMA_READ;
      case 3: return COMP_SWAP;
      case 4: return FETCH_ADD;
      case 5: return BIND_MW;
      case 6: return LOCAL_INV;
      case 128: return RECV;
      case 129: return RECV_RDMA_WITH_IMM;
      default: throw new IllegalArgumentException("unknown work completion opcode " + code);
    }
  }

  /** The completion opcode that a successful send-queue request of {@code op} reports. */
  public static WcOpcode forRequest(WrOpcode op) {
    switch (op) {
      case RDMA_WRITE:
      case RDMA_WRITE_WITH_IMM: return RDMA_WRITE;
      case RDMA_READ: return RDMA_READ;
      case ATOMIC_CMP_AND_SWP: return COMP_SWAP;
      case ATOMIC_FETCH_AND_ADD: return FETCH_ADD;
      case LOCAL_INV: return LOCAL_INV;
      case BIND_MW: return BIND_MW;
      default: return SEND;
    }
  }
}
