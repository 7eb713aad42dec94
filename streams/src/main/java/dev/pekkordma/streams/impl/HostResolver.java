package dev.pekkordma.streams.impl;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;

/**
 * Resolves an unresolved address (as Tcp's {@code outgoingConnection(host, port)} makes them)
 * with the JDK's resolver, on the system's blocking-IO dispatcher: a name lookup may wait on
 * the network, and must not wait on a stream's thread.
 */
final class HostResolver {
  private HostResolver() {}

  /** {@code address} resolved; fails with the UnknownHostException of a name that is none. */
  static CompletionStage<InetSocketAddress> resolve(ActorSystem<?> system,
      InetSocketAddress address) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return new InetSocketAddress(InetAddress.getByName(address.getHostString()),
            address.getPort());
      } catch (UnknownHostException e) {
        throw new CompletionException(e);
      }
    }, system.dispatchers().lookup(DispatcherSelector.blocking()));
  }
}
