package dev.pekkordma.streams;

import java.net.InetSocketAddress;

/**
 * An RDMA connection or binding failed: the message names the peer (or the address bound) and
 * the reason, as {@link #peer()} and {@link #reason()} do.
 */
public class RdmaStreamException extends RuntimeException {
  private final InetSocketAddress peer;
  private final String reason;

  public RdmaStreamException(String what, InetSocketAddress peer, String reason) {
    this(what, peer, reason, null);
  }

  public RdmaStreamException(String what, InetSocketAddress peer, String reason, Throwable cause) {
    super(what + " " + format(peer) + " failed: " + reason, cause);
    this.peer = peer;
    this.reason = reason;
  }

  /** The peer (or for a binding, the address), as the application named it. */
  public InetSocketAddress peer() {
    return peer;
  }

  public String reason() {
    return reason;
  }

  /** host:port, as the messages print it. */
  public static String format(InetSocketAddress a) {
    if (a == null) return "?";
    String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
    return host + ":" + a.getPort();
  }
}
