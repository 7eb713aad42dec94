package dev.pekkordma.streams;

import java.net.InetSocketAddress;

/** An established client connection, as Tcp's OutgoingConnection. */
public final class OutgoingConnection {
  private final InetSocketAddress remoteAddress;
  private final InetSocketAddress localAddress;

  OutgoingConnection(InetSocketAddress remoteAddress, InetSocketAddress localAddress) {
    this.remoteAddress = remoteAddress;
    this.localAddress = localAddress;
  }

  public InetSocketAddress remoteAddress() {
    return remoteAddress;
  }

  public InetSocketAddress localAddress() {
    return localAddress;
  }

  @Override
  public String toString() {
    return "OutgoingConnection(" + localAddress + " -> " + remoteAddress + ")";
  }
}
