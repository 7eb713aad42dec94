package dev.pekkordma.streams;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;

/** A bound listener, as Tcp's ServerBinding: unbind it, or wait for it to be unbound. */
public final class ServerBinding {
  private final InetSocketAddress localAddress;
  private final Supplier<CompletionStage<Done>> unbind;
  private final CompletionStage<Done> whenUnbound;

  ServerBinding(InetSocketAddress localAddress, Supplier<CompletionStage<Done>> unbind,
      CompletionStage<Done> whenUnbound) {
    this.localAddress = localAddress;
    this.unbind = unbind;
    this.whenUnbound = whenUnbound;
  }

  /** The address bound, with the port the system picked for port 0. */
  public InetSocketAddress localAddress() {
    return localAddress;
  }

  /**
   * Stops listening: requests not yet taken are rejected, and the source of incoming
   * connections completes. Connections already made live on.
   */
  public CompletionStage<Done> unbind() {
    return unbind.get();
  }

  public CompletionStage<Done> whenUnbound() {
    return whenUnbound;
  }

  @Override
  public String toString() {
    return "ServerBinding(" + localAddress + ")";
  }
}
