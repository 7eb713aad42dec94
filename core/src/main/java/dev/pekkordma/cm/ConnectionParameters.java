package dev.pekkordma.cm;

import dev.pekkordma.verbs.QpAttributes;

/** What {@code rdma_connect} and {@code rdma_accept} carry ({@code rdma_conn_param}). */
public record ConnectionParameters(
    byte[] privateData, int responderResources, int initiatorDepth, int retryCount,
    int rnrRetryCount) {

  /** librdmacm's limits on private data: 56 bytes in a connect request, 196 in an accept. */
  public static final int MAX_CONNECT_PRIVATE_DATA = 56;
  public static final int MAX_ACCEPT_PRIVATE_DATA = 196;
  public static final int MAX_REJECT_PRIVATE_DATA = 148;

  /** Transport retries of the defaults: {@link QpAttributes#DEFAULT_RETRY_COUNT}. */
  public static final int DEFAULT_RETRY_COUNT = QpAttributes.DEFAULT_RETRY_COUNT;

  /** RNR retries of the defaults: 7, retry forever, as librdmacm's examples do. */
  public static final int DEFAULT_RNR_RETRY_COUNT = 7;

  public static ConnectionParameters defaults() {
    return withPrivateData(new byte[0]);
  }

  public static ConnectionParameters withPrivateData(byte[] data) {
    return new ConnectionParameters(data, 1, 1, DEFAULT_RETRY_COUNT, DEFAULT_RNR_RETRY_COUNT);
  }

  public byte[] privateDataOrEmpty() {
    return privateData == null ? new byte[0] : privateData;
  }
}
