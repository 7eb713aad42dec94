package dev.pekkordma.verbs;

/** Queue pair transport types, with libibverbs' {@code ibv_qp_type} codes. */
public enum QpType {
  RC(2), UC(3), UD(4);

  public final int code;

  QpType(int code) {
    this.code = code;
  }

  public static QpType of(int code) {
    for (QpType t : values()) if (t.code == code) return t;
    throw new IllegalArgumentException("unknown QP type code " + code);
  }
}
