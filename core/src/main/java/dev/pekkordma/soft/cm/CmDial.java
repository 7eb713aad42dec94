package dev.pekkordma.soft.cm;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * An active link's TCP connect, begun without blocking on the thread that opens the link. To a
 * listener on this host it has finished before {@link #begin} returns, so the link is up at once
 * and a REQ can go out on the caller's thread; otherwise the link's thread waits for it.
 */
final class CmDial {
  private final SocketChannel channel;
  private IOException failure; // the connect failed at once (refused, say)
  private boolean connected;

  private CmDial(SocketChannel channel) {
    this.channel = channel;
  }

  /**
   * Binds a socket to {@code local} and starts connecting it to {@code to}; fails only when the
   * socket cannot be had or bound (the connect's own failure waits for {@link #finish}).
   */
  static CmDial begin(InetAddress local, InetSocketAddress to) throws IOException {
    SocketChannel ch = SocketChannel.open();
    try {
      ch.bind(new InetSocketAddress(local, 0));
      ch.configureBlocking(false);
    } catch (IOException | RuntimeException e) {
      CmSocket.closeQuietly(ch);
      throw e;
    }
    CmDial d = new CmDial(ch);
    try {
      d.connected = ch.connect(to) || ch.finishConnect();
      if (d.connected) d.blocking();
    } catch (IOException e) {
      d.failure = e;
      CmSocket.closeQuietly(ch);
    }
    return d;
  }

  /** Whether the connect has finished already, the socket ready for {@link #finish}. */
  boolean connected() {
    return connected;
  }

  /** The connected socket, once the connect has finished; waits at most {@code timeoutMillis}. */
  Socket finish(int timeoutMillis) throws IOException {
    if (failure != null) throw failure;
    if (!connected) {
      try (Selector s = Selector.open()) {
        channel.register(s, SelectionKey.OP_CONNECT);
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (!channel.finishConnect()) {
          long left = (deadline - System.nanoTime()) / 1_000_000L;
          if (left <= 0) throw new SocketTimeoutException("Connect timed out");
          s.select(left);
        }
      } catch (IOException e) {
        close();
        throw e;
      }
      connected = true;
      blocking(); // the selector is closed: the channel may block again
    }
    return channel.socket();
  }

  private void blocking() throws IOException {
    channel.configureBlocking(true);
    channel.socket().setTcpNoDelay(true);
  }

  void close() {
    CmSocket.closeQuietly(channel);
  }
}
