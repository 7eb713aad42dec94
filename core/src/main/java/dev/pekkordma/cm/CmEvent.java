package dev.pekkordma.cm;

import dev.pekkordma.verbs.RdmaException;

/**
 * A connection manager event ({@code rdma_cm_event}), already acknowledged. For CONNECT_REQUEST,
 * {@code id} is the new connection's id and {@code listenId} the listener's. {@code status} is
 * librdmacm's: 0, a negative errno, for REJECTED the reject reason (28 consumer defined, 8
 * no listener), for a datagram id's UNREACHABLE a SIDR status ({@link #SIDR_REJECT}, {@link
 * #SIDR_UNSUPPORTED}) or -ETIMEDOUT. {@code ud} is a datagram id's ({@link
 * RdmaPortSpace#datagram}): set on CONNECT_REQUEST, ESTABLISHED and MULTICAST_JOIN, null
 * otherwise and on connected ids.
 */
public record CmEvent(
    CmEventType type, CmId id, CmId listenId, int status, byte[] privateData,
    ConnectionParameters parameters, UdParameters ud) {

  /** An event of a connected (RC) id. */
  public CmEvent(CmEventType type, CmId id, CmId listenId, int status, byte[] privateData,
      ConnectionParameters parameters) {
    this(type, id, listenId, status, privateData, parameters, null);
  }

  public static final int REJECT_NO_LISTENER = 8;
  public static final int REJECT_CONSUMER_DEFINED = 28;

  /**
   * A datagram id's connect (SIDR) that ends in UNREACHABLE carries the reply's SIDR status
   * ({@code ib_cm_sidr_status}): this one when nothing listens on the port...
   */
  public static final int SIDR_UNSUPPORTED = 1;
  /** ... and this one when the listener's application rejected it (with its private data). */
  public static final int SIDR_REJECT = 2;

  /**
   * The type with its status when not 0, a negative one named: {@code ADDR_ERROR (status -19,
   * ENODEV)}, {@code REJECTED (status 28)}. What failure reasons and logs print.
   */
  public String outcome() {
    if (status == 0) return type.toString();
    return type + " (status " + status
        + (status < 0 ? ", " + RdmaException.errnoName(-status) : "") + ")";
  }

  @Override
  public String toString() {
    return outcome()
        + (privateData != null && privateData.length > 0
            ? " with " + privateData.length + " bytes of private data" : "");
  }
}
