package dev.pekkordma.streams;


import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.verbs.RdmaException;
import java.net.InetSocketAddress;
import org.apache.pekko.stream.BindFailedException;

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
    super(what + " " + SocketAddresses.format(peer) + " failed: " + reason, cause);
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

  /**
   * What a binding that failed fails with: Pekko's {@code BindFailedException}, as {@code Tcp}'s
   * does, when the address is in use ({@code cause} saying so), its message naming the address
   * and why (as Tcp's), with this failure as its cause; else this failure.
   */
  public static RuntimeException bindFailure(RdmaStreamException failure, RuntimeException cause) {
    if (cause instanceof RdmaException r && r.errno() == RdmaException.EADDRINUSE) {
      return new BindFailed(failure);
    }
    return failure;
  }

  /** Pekko's BindFailedException says only "bind failed"; as Tcp's, this one says what. */
  private static final class BindFailed extends BindFailedException {
    private final String message;

    BindFailed(RdmaStreamException failure) {
      message = "Bind failed because of " + failure.getMessage();
      initCause(failure);
    }

    @Override
    public String getMessage() {
      return message;
    }
  }
}
