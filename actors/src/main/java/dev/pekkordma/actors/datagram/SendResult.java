package dev.pekkordma.actors.datagram;

import java.net.InetSocketAddress;

/**
 * The answer to a send, for senders that ask for one. Sent means the device put it on the wire,
 * not that anyone received it: datagrams are unreliable, and one that finds no receive at the
 * peer is dropped there.
 */
public sealed interface SendResult {
  /** {@code to}: the address or group it went to, or null for a reply to a {@link Peer}. */
  record Sent(InetSocketAddress to, int bytes) implements SendResult {}

  /** Why it was not sent, naming the peer and the sizes or the setting that refused it. */
  record SendFailed(InetSocketAddress to, String reason) implements SendResult {}
}
