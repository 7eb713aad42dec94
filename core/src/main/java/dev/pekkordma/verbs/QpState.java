package dev.pekkordma.verbs;

/** Queue pair states, with libibverbs' {@code ibv_qp_state} codes. */
public enum QpState {
  RESET(0), INIT(1), RTR(2), RTS(3), SQD(4), SQE(5), ERR(6);

  public final int code;

  QpState(int code) {
    this.code = code;
  }

  public static QpState of(int code) {
    for (QpState s : values()) if (s.code == code) return s;
    throw new IllegalArgumentException("unknown QP state code " + code);
  }
}
