package dev.pekkordma.verbs;

/** Asynchronous event types, with libibverbs' {@code ibv_event_type} codes. */
public enum AsyncEventType {
  CQ_ERR(0), QP_FATAL(1), QP_REQ_ERR(2), QP_ACCESS_ERR(3), COMM_EST(4), SQ_DRAINED(5),
  PATH_MIG(6), PATH_MIG_ERR(7), DEVICE_FATAL(8), PORT_ACTIVE(9), PORT_ERR(10), LID_CHANGE(11),
  PKEY_CHANGE(12), SM_CHANGE(13), SRQ_ERR(14), SRQ_LIMIT_REACHED(15), QP_LAST_WQE_REACHED(16),
  CLIENT_REREGISTER(17), GID_CHANGE(18), WQ_FATAL(19);

  public final int code;

  AsyncEventType(int code) {
    this.code = code;
  }

  public static AsyncEventType of(int code) {
    for (AsyncEventType t : values()) if (t.code == code) return t;
    throw new IllegalArgumentException("unknown async event type " + code);
  }

  public boolean isQpEvent() {
    switch (this) {
      case QP_FATAL: case QP_REQ_ERR: case QP_ACCESS_ERR: case COMM_EST: case SQ_DRAINED:
      case PATH_MIG: case PATH_MIG_ERR: case QP_LAST_WQE_REACHED: return true;
      default: return false;
    }
  }

  public boolean isPortEvent() {
    switch (this) {
      case PORT_ACTIVE: case PORT_ERR: case LID_CHANGE: case PKEY_CHANGE: case SM_CHANGE:
      case CLIENT_REREGISTER: case GID_CHANGE: return true;
      default: return false;
    }
  }
}
