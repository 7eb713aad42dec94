package dev.pekkordma.verbs;

/**
 * Attributes for {@code ibv_modify_qp} and {@code ibv_query_qp} ({@code ibv_qp_attr}): every
 * setter also sets the attribute's bit in the mask, so the mask is what the caller set.
 */
public final class QpAttributes {
  // ibv_qp_attr_mask bits
  public static final int STATE = 1;
  public static final int CUR_STATE = 1 << 1;
  public static final int EN_SQD_ASYNC_NOTIFY = 1 << 2;
  public static final int ACCESS_FLAGS = 1 << 3;
  public static final int PKEY_INDEX = 1 << 4;
  public static final int PORT = 1 << 5;
  public static final int QKEY = 1 << 6;
  public static final int AV = 1 << 7;
  public static final int PATH_MTU = 1 << 8;
  public static final int TIMEOUT = 1 << 9;
  public static final int RETRY_CNT = 1 << 10;
  public static final int RNR_RETRY = 1 << 11;
  public static final int RQ_PSN = 1 << 12;
  public static final int MAX_QP_RD_ATOMIC = 1 << 13;
  public static final int ALT_PATH = 1 << 14;
  public static final int MIN_RNR_TIMER = 1 << 15;
  public static final int SQ_PSN = 1 << 16;
  public static final int MAX_DEST_RD_ATOMIC = 1 << 17;
  public static final int PATH_MIG_STATE = 1 << 18;
  public static final int CAP = 1 << 19;
  public static final int DEST_QPN = 1 << 20;

  private static final String[] NAMES = {"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY",
      "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY", "AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT",
      "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH", "MIN_RNR_TIMER", "SQ_PSN",
      "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN"};

  private int mask;
  private QpState state = QpState.RESET;
  private QpState currentState = QpState.RESET;
  private boolean sqdAsyncNotify;
  private int accessFlags;
  private int pkeyIndex;
  private int port = 1;
  private int qkey;
  private AddressVector addressVector;
  private Mtu pathMtu = Mtu.MTU_1024;
  private int timeout;
  private int retryCount;
  private int rnrRetry;
  private int rqPsn;
  private int sqPsn;
  private int maxRdAtomic;
  private int maxDestRdAtomic;
  private int minRnrTimer;
  private int destQpNum;

  public static String maskNames(int mask) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < NAMES.length; i++) {
      if ((mask & (1 << i)) != 0) b.append(b.length() == 0 ? "" : "|").append(NAMES[i]);
    }
    return b.length() == 0 ? "none" : b.toString();
  }

  public int mask() { return mask; }

  public boolean has(int bit) { return (mask & bit) != 0; }

  public QpAttributes state(QpState s) { state = s; mask |= STATE; return this; }
  public QpAttributes currentState(QpState s) { currentState = s; mask |= CUR_STATE; return this; }
  public QpAttributes sqdAsyncNotify(boolean b) { sqdAsyncNotify = b; mask |= EN_SQD_ASYNC_NOTIFY; return this; }
  public QpAttributes accessFlags(int a) { accessFlags = a; mask |= ACCESS_FLAGS; return this; }
  public QpAttributes pkeyIndex(int i) { pkeyIndex = i; mask |= PKEY_INDEX; return this; }
  public QpAttributes port(int p) { port = p; mask |= PORT; return this; }
  public QpAttributes qkey(int q) { qkey = q; mask |= QKEY; return this; }
  public QpAttributes addressVector(AddressVector av) { addressVector = av; mask |= AV; return this; }
  public QpAttributes pathMtu(Mtu m) { pathMtu = m; mask |= PATH_MTU; return this; }
  public QpAttributes timeout(int t) { timeout = t; mask |= TIMEOUT; return this; }
  public QpAttributes retryCount(int r) { retryCount = r; mask |= RETRY_CNT; return this; }
  public QpAttributes rnrRetry(int r) { rnrRetry = r; mask |= RNR_RETRY; return this; }
  public QpAttributes rqPsn(int p) { rqPsn = p; mask |= RQ_PSN; return this; }
  public QpAttributes sqPsn(int p) { sqPsn = p; mask |= SQ_PSN; return this; }
  public QpAttributes maxRdAtomic(int n) { maxRdAtomic = n; mask |= MAX_QP_RD_ATOMIC; return this; }
  public QpAttributes maxDestRdAtomic(int n) { maxDestRdAtomic = n; mask |= MAX_DEST_RD_ATOMIC; return this; }
  public QpAttributes minRnrTimer(int t) { minRnrTimer = t; mask |= MIN_RNR_TIMER; return this; }
  public QpAttributes destQpNum(int q) { destQpNum = q; mask |= DEST_QPN; return this; }

  public QpState state() { return state; }
  public QpState currentState() { return currentState; }
  public boolean sqdAsyncNotify() { return sqdAsyncNotify; }
  public int accessFlags() { return accessFlags; }
  public int pkeyIndex() { return pkeyIndex; }
  public int port() { return port; }
  public int qkey() { return qkey; }
  public AddressVector addressVector() { return addressVector; }
  public Mtu pathMtu() { return pathMtu; }
  public int timeout() { return timeout; }
  public int retryCount() { return retryCount; }
  public int rnrRetry() { return rnrRetry; }
  public int rqPsn() { return rqPsn; }
  public int sqPsn() { return sqPsn; }
  public int maxRdAtomic() { return maxRdAtomic; }
  public int maxDestRdAtomic() { return maxDestRdAtomic; }
  public int minRnrTimer() { return minRnrTimer; }
  public int destQpNum() { return destQpNum; }

  /** RESET to INIT for an RC or UC QP on {@code port}. */
  public static QpAttributes toInit(int port, int access) {
    return new QpAttributes().state(QpState.INIT).pkeyIndex(0).port(port).accessFlags(access);
  }

  /** RESET to INIT for a UD QP. */
  public static QpAttributes toInitUd(int port, int qkey) {
    return new QpAttributes().state(QpState.INIT).pkeyIndex(0).port(port).qkey(qkey);
  }

  /** INIT to RTR for an RC QP talking to {@code destQpNum} at {@code av}. */
  public static QpAttributes toRtr(AddressVector av, int destQpNum, int rqPsn, Mtu mtu) {
    return new QpAttributes().state(QpState.RTR).addressVector(av).destQpNum(destQpNum)
        .rqPsn(rqPsn).pathMtu(mtu).maxDestRdAtomic(16).minRnrTimer(12);
  }

  /**
   * Transport retries where the runtime chooses: 6, not the 3-bit field's 7, because Soft-RoCE
   * (rxe) takes a transport retry count of 7 as "retry forever", as the specification does only
   * for RNR retries: a QP with 7 would never report a dead peer there (RETRY_EXC_ERR).
   */
  public static final int DEFAULT_RETRY_COUNT = 6;

  /** RTR to RTS for an RC QP: transport retries {@link #DEFAULT_RETRY_COUNT}, RNR forever. */
  public static QpAttributes toRts(int sqPsn) {
    return new QpAttributes().state(QpState.RTS).sqPsn(sqPsn).timeout(14)
        .retryCount(DEFAULT_RETRY_COUNT).rnrRetry(7).maxRdAtomic(16);
  }
}
