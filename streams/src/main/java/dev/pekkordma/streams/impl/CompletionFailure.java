package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.WcStatus;

/** How a work completion's error status reads in a connection's failure. */
final class CompletionFailure {
  private CompletionFailure() {}

  /** {@code what} ("a send") completed with {@code s}; {@code cause}, the QP's, may be null. */
  static String describe(String what, WcStatus s, String cause) {
    return what + " completed with " + s.description + " (" + s + ")"
        + (cause != null ? ": " + cause
            : s == WcStatus.RETRY_EXC_ERR ? ": the peer is unreachable" : "")
        + (s == WcStatus.LOC_LEN_ERR ? ": the peer sent a SEND with data (ours take none)" : "");
  }

  /** The QP went to the error state, which flushed {@code what}. */
  static String flushed(String what, WcStatus s, String cause) {
    return "the QP went to the error state (" + what + " completed with " + s.description + ", "
        + s + ")" + (cause != null ? ": " + cause : "");
  }
}
