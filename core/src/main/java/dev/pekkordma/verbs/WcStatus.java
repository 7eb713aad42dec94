package dev.pekkordma.verbs;

/** Work completion statuses, with libibverbs' {@code ibv_wc_status} codes. */
public enum WcStatus {
  SUCCESS(0, "success"),
  LOC_LEN_ERR(1, "local length error"),
  LOC_QP_OP_ERR(2, "local QP operation error"),
  LOC_EEC_OP_ERR(3, "local EE context operation error"),
  LOC_PROT_ERR(4, "local protection error"),
  WR_FLUSH_ERR(5, "work request flushed error"),
  MW_BIND_ERR(6, "memory window bind error"),
  BAD_RESP_ERR(7, "bad response error"),
  LOC_ACCESS_ERR(8, "local access error"),
  REM_INV_REQ_ERR(9, "remote invalid request error"),
  REM_ACCESS_ERR(10, "remote access error"),
  REM_OP_ERR(11, "remote operation error"),
  RETRY_EXC_ERR(12, "transport retry counter exceeded"),
  RNR_RETRY_EXC_ERR(13, "RNR retry counter exceeded"),
  LOC_RDD_VIOL_ERR(14, "local RDD violation error"),
  REM_INV_RD_REQ_ERR(15, "remote invalid RD request"),
  REM_ABORT_ERR(16, "aborted error"),
  INV_EECN_ERR(17, "invalid EE context number"),
  INV_EEC_STATE_ERR(18, "invalid EE context state"),
  FATAL_ERR(19, "fatal error"),
  RESP_TIMEOUT_ERR(20, "response timeout error"),
  GENERAL_ERR(21, "general error");

  public final int code;
  public final String description;
  private static final WcStatus[] BY_CODE = values();

  WcStatus(int code, String description) {
    this.code = code;
    this.description = description;
  }

  public static WcStatus of(int code) {
    if (code < 0 || code >= BY_CODE.length) {
      throw new IllegalArgumentException("unknown work completion status " + code);
    }
    return BY_CODE[code];
  }
}
