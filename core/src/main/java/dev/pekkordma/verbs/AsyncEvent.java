package dev.pekkordma.verbs;

/**
 * An asynchronous event ({@code ibv_get_async_event}). Exactly one of qp, cq, srq or port is set,
 * according to the type; device events carry none.
 */
public record AsyncEvent(
    AsyncEventType type, QueuePair qp, CompletionQueue cq, SharedReceiveQueue srq, int port) {

  public static AsyncEvent ofQp(AsyncEventType type, QueuePair qp) {
    return new AsyncEvent(type, qp, null, null, 0);
  }

  public static AsyncEvent ofCq(AsyncEventType type, CompletionQueue cq) {
    return new AsyncEvent(type, null, cq, null, 0);
  }

  public static AsyncEvent ofSrq(AsyncEventType type, SharedReceiveQueue srq) {
    return new AsyncEvent(type, null, null, srq, 0);
  }

  public static AsyncEvent ofPort(AsyncEventType type, int port) {
    return new AsyncEvent(type, null, null, null, port);
  }

  public static AsyncEvent ofDevice(AsyncEventType type) {
    return new AsyncEvent(type, null, null, null, 0);
  }

  @Override
  public String toString() {
    if (qp != null) return type + " on QP " + qp.qpNum();
    if (cq != null) return type + " on CQ";
    if (srq != null) return type + " on SRQ";
    if (port != 0) return type + " on port " + port;
    return type.toString();
  }
}
