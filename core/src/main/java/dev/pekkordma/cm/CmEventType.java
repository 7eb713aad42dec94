package dev.pekkordma.cm;

/** Connection manager events, with librdmacm's {@code rdma_cm_event_type} codes. */
public enum CmEventType {
  ADDR_RESOLVED(0), ADDR_ERROR(1), ROUTE_RESOLVED(2), ROUTE_ERROR(3), CONNECT_REQUEST(4),
  CONNECT_RESPONSE(5), CONNECT_ERROR(6), UNREACHABLE(7), REJECTED(8), ESTABLISHED(9),
  DISCONNECTED(10), DEVICE_REMOVAL(11), MULTICAST_JOIN(12), MULTICAST_ERROR(13),
  ADDR_CHANGE(14), TIMEWAIT_EXIT(15);

  public final int code;

  CmEventType(int code) {
    this.code = code;
  }

  public static CmEventType of(int code) {
    for (CmEventType t : values()) if (t.code == code) return t;
    throw new IllegalArgumentException("unknown CM event type " + code);
  }
}
