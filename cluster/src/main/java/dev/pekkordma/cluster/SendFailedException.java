package dev.pekkordma.cluster;

import org.apache.pekko.actor.Address;

/**
 * A message that was not delivered, or whose delivery is not known (it was in flight when the
 * connection ended): the future of its send, or the per-peer stream, fails with this.
 */
public final class SendFailedException extends RuntimeException {
  private final transient Address member;

  public SendFailedException(Address member, String reason) {
    super("to " + member + ": " + reason);
    this.member = member;
  }

  public Address member() {
    return member;
  }
}
