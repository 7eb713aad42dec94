package dev.pekkordma.verbs;

/** Port states, with libibverbs' {@code ibv_port_state} codes. */
public enum PortState {
  NOP(0), DOWN(1), INIT(2), ARMED(3), ACTIVE(4), ACTIVE_DEFER(5);

  public final int code;

  PortState(int code) {
    this.code = code;
  }

  public static PortState of(int code) {
    for (PortState s : values()) if (s.code == code) return s;
    throw new IllegalArgumentException("unknown port state code " + code);
  }
}
