package dev.pekkordma.cluster;

/**
 * A member sent what the wire protocol forbids: its connection is no longer trusted. Checked, so
 * that no caller on the receive path can let it escape; without a stack trace, as it is a verdict
 * on the peer's bytes, not on this member's code.
 */
final class ProtocolViolation extends Exception {
  ProtocolViolation(String what) {
    super(what, null, false, false);
  }
}
