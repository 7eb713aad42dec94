package dev.pekkordma.verbs;

/** {@code ibv_modify_qp} asked for a transition the IB specification does not allow. */
public final class IllegalQpTransitionException extends RdmaException {
  private final QpState from;
  private final QpState to;

  public IllegalQpTransitionException(int qpNum, QpType type, QpState from, QpState to, String why) {
    super("ibv_modify_qp", EINVAL, type + " QP " + qpNum + ": illegal transition " + from + " -> "
        + to + (why.isEmpty() ? "" : ": " + why));
    this.from = from;
    this.to = to;
  }

  public QpState from() {
    return from;
  }

  public QpState to() {
    return to;
  }
}
