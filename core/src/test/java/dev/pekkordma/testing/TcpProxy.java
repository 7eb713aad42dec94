package dev.pekkordma.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy between two processes, for fault tests: it passes bytes both ways until told to
 * blackhole them (connections stay open, nothing more gets through, as with a cable pulled),
 * reset every connection (RST), or cut the next bytes of each connection mid-stream.
 */
public final class TcpProxy implements AutoCloseable {
  public enum Mode { PASS, BLACKHOLE }

  private final ServerSocket listener;
  private final InetSocketAddress target;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final AtomicLong forwarded = new AtomicLong();
  private final AtomicLong accepted = new AtomicLong();
  private volatile Mode mode = Mode.PASS;
  /** When not negative: the connection carrying this many more bytes towards the target is cut. */
  private volatile long cutAfter = -1;

  public TcpProxy(InetSocketAddress target) throws IOException {
    this.target = target;
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::acceptLoop, "tcp-proxy-" + listener.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  public int port() {
    return listener.getLocalPort();
  }

  public void mode(Mode m) {
    mode = m;
  }

  /** Connections made through the proxy so far. */
  public long accepted() {
    return accepted.get();
  }

  /** Bytes passed so far, both ways. */
  public long forwarded() {
    return forwarded.get();
  }

  /** Resets every open connection, as a middlebox losing its state would. */
  public void resetAll() {
    for (Socket s : sockets) {
      try {
        s.setSoLinger(true, 0);
        s.close();
      } catch (IOException e) {
        // gone already
      }
    }
    sockets.clear();
  }

  /** Cuts the connection that carries the next {@code bytes}-th byte towards the target. */
  public void cutAfter(long bytes) {
    cutAfter = bytes;
  }

  private void acceptLoop() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        accepted.incrementAndGet();
        Socket server = new Socket();
        server.connect(target, 5000);
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(server);
        pump(client, server, true);
        pump(server, client, false);
      } catch (IOException e) {
        if (listener.isClosed()) return;
      }
    }
  }

  private void pump(Socket from, Socket to, boolean towardsTarget) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[64 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          while (mode == Mode.BLACKHOLE) Thread.sleep(5); // held, never passed on
          if (towardsTarget && cutAfter >= 0) {
            long left = cutAfter;
            if (n >= left) {
              cutAfter = -1; // once: the connections after it pass whole
              out.write(buf, 0, (int) left);
              out.flush();
              from.close();
              to.close();
              return;
            }
            cutAfter = left - n;
          }
          out.write(buf, 0, n);
          out.flush();
          forwarded.addAndGet(n);
        }
      } catch (IOException | InterruptedException e) {
        // one side went away: so does the other
      } finally {
        try {
          from.close();
          to.close();
        } catch (IOException ignored) {
          // closing
        }
      }
    }, "tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    listener.close();
    resetAll();
  }
}
