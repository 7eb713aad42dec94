package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.verbs.WcStatus;

/** How a work completion's error status, or a CM event, reads in a connection's failure. */
final class CompletionFailure {
  private CompletionFailure() {}

  /** {@code what} ("a send") completed with {@code s}; {@code cause}, the QP's, may be null. */
  static String describe(String what, WcStatus s, String cause) {
    return what + " completed with " + s.description + " (" + s + ")"
        + (cause != null ? ": " + cause
            : s == WcStatus.RETRY_EXC_ERR ? ": the peer is unreachable" : "")
        + (s == WcStatus.LOC_LEN_ERR ? ": the peer sent a SEND with data (ours take none)" : "");
  }

  /** A CM event that ends a connection attempt. */
  static String cmEvent(CmEvent e) {
    return e.type() == CmEventType.REJECTED
        ? "connection refused: " + e.outcome() + " (nobody listens there?)"
        : e.outcome();
  }

  /** A CM event that ends a connect or an accept, from {@code local} (null when passive). */
  static String connecting(CmEvent e, java.net.InetSocketAddress local) {
    return cmEvent(e) + fromLocal(e.type(), local);
  }

  /**
   * An address error when the connection was to go out from {@code local} names it (null: none
   * was given): most likely an address of no RDMA device.
   */
  static String fromLocal(CmEventType t, java.net.InetSocketAddress local) {
    return t != CmEventType.ADDR_ERROR || local == null ? "" : " from the local address "
        + SocketAddresses.format(local)
        + " (is it an address of an RDMA device here?)";
  }

  /** The QP went to the error state, which flushed {@code what}. */
  static String flushed(String what, WcStatus s, String cause) {
    return "the QP went to the error state (" + what + " completed with " + s.description + ", "
        + s + ")" + (cause != null ? ": " + cause : "");
  }
}
