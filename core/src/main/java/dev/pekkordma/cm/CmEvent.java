package dev.pekkordma.cm;

/**
 * A connection manager event ({@code rdma_cm_event}), already acknowledged. For CONNECT_REQUEST,
 * {@code id} is the new connection's id and {@code listenId} the listener's. {@code status} is
 * librdmacm's: 0, a negative errno, or for REJECTED the reject reason (28 consumer defined, 8
 * no listener). {@code ud} is a datagram id's ({@link RdmaPortSpace#datagram}): set on
 * CONNECT_REQUEST, ESTABLISHED and MULTICAST_JOIN, null otherwise and on connected ids.
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

  @Override
  public String toString() {
    return type + (status != 0 ? " (status " + status + ")" : "")
        + (privateData != null && privateData.length > 0
            ? " with " + privateData.length + " bytes of private data" : "");
  }
}
