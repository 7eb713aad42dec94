package dev.pekkordma.verbs;

import static dev.pekkordma.verbs.QpAttributes.*;

/**
 * The IB specification's QP state transitions with the attributes each requires and allows (the
 * table the Linux kernel enforces in {@code ib_modify_qp_is_ok}).
 */
public final class QpStateMachine {
  private QpStateMachine() {}

  /** Whether {@code from -> to} exists at all for this QP type. */
  public static boolean isLegal(QpType type, QpState from, QpState to) {
    return rule(type, from, to) != null;
  }

  /**
   * Checks a modify: the transition exists, every required attribute is in the mask and nothing
   * outside required and optional is. Throws naming from, to and the offending attributes.
   */
  public static void check(int qpNum, QpType type, QpState from, QpAttributes attrs) {
    int mask = attrs.mask();
    QpState to = attrs.has(STATE) ? attrs.state() : from;
    if (attrs.has(CUR_STATE) && attrs.currentState() != from
        && !(from == QpState.SQE || from == QpState.SQD || from == QpState.RTS)) {
      throw new IllegalQpTransitionException(qpNum, type, from, to,
          "CUR_STATE says " + attrs.currentState() + " but the QP is in " + from);
    }
    int[] rule = rule(type, from, to);
    if (rule == null) {
      throw new IllegalQpTransitionException(qpNum, type, from, to,
          "the IB specification has no such transition for " + type);
    }
    int given = mask & ~STATE;
    int missing = rule[0] & ~given;
    if (missing != 0) {
      throw new IllegalQpTransitionException(qpNum, type, from, to,
          "missing required attributes " + maskNames(missing));
    }
    int extra = given & ~(rule[0] | rule[1]);
    if (extra != 0) {
      throw new IllegalQpTransitionException(qpNum, type, from, to,
          "attributes not allowed in this transition: " + maskNames(extra));
    }
  }

  /** {required, optional} masks, or null when the transition does not exist. */
  private static int[] rule(QpType type, QpState from, QpState to) {
    boolean rc = type == QpType.RC;
    boolean uc = type == QpType.UC;
    boolean ud = type == QpType.UD;
    if (to == QpState.RESET) {
      return new int[] {0, 0};
    }
    if (to == QpState.ERR) { // from any state but RESET
      return from == QpState.RESET ? null : new int[] {0, 0};
    }
    switch (from) {
      case RESET:
        if (to == QpState.INIT) {
          return new int[] {ud ? PKEY_INDEX | PORT | QKEY : PKEY_INDEX | PORT | ACCESS_FLAGS, 0};
        }
        return null;
      case INIT:
        if (to == QpState.INIT) {
          return new int[] {0, ud ? PKEY_INDEX | PORT | QKEY : PKEY_INDEX | PORT | ACCESS_FLAGS};
        }
        if (to == QpState.RTR) {
          if (rc) {
            return new int[] {AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX};
          }
          if (uc) {
            return new int[] {AV | PATH_MTU | DEST_QPN | RQ_PSN, ALT_PATH | ACCESS_FLAGS | PKEY_INDEX};
          }
          return new int[] {0, PKEY_INDEX | QKEY};
        }
        return null;
      case RTR:
        if (to == QpState.RTS) {
          if (rc) {
            return new int[] {SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE};
          }
          if (uc) {
            return new int[] {SQ_PSN, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE};
          }
          return new int[] {SQ_PSN, CUR_STATE | QKEY};
        }
        return null;
      case RTS:
        if (to == QpState.RTS) {
          if (ud) return new int[] {0, CUR_STATE | QKEY};
          return new int[] {0, CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE
              | (rc ? MIN_RNR_TIMER : 0)};
        }
        if (to == QpState.SQD) {
          return new int[] {0, EN_SQD_ASYNC_NOTIFY};
        }
        return null;
      case SQD:
        if (to == QpState.RTS) {
          if (ud) return new int[] {0, CUR_STATE | QKEY};
          return new int[] {0, CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE
              | (rc ? MIN_RNR_TIMER : 0)};
        }
        if (to == QpState.SQD) {
          if (ud) return new int[] {0, PKEY_INDEX | QKEY};
          if (uc) return new int[] {0, AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE};
          return new int[] {0, PORT | AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC
              | MAX_DEST_RD_ATOMIC | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER
              | PATH_MIG_STATE};
        }
        return null;
      case SQE:
        if (to == QpState.RTS && !rc) {
          return new int[] {0, CUR_STATE | (uc ? ACCESS_FLAGS : QKEY)};
        }
        return null;
      case ERR:
      default:
        return null;
    }
  }
}
