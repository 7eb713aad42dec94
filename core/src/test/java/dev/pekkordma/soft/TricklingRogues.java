package dev.pekkordma.soft;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Peers that hold a fabric's handshakes as long as they can, worked by one thread: each writes
 * its bytes a burst at a time with pauses, falls silent after some of them, and, cut off,
 * connects again if told to. How a rogue connects (and what it writes through: the socket, or
 * TLS over it) is the test's.
 */
final class TricklingRogues extends Thread {
  /** Connects one rogue: its socket, and what it writes through (null: cut off already). */
  interface Opener {
    Socket[] open() throws IOException;
  }

  /**
   * @param firstBurst bytes of the first burst (a whole opening at once, say)
   * @param stopAfter how many of {@code bytes} it writes before it falls silent
   */
  record Pattern(int rogues, int firstBurst, int burst, int pauseMillis, int stopAfter,
      boolean reconnect) {}

  private final Pattern p;
  private final byte[] bytes;
  private final Opener opener;
  private final Duration deadline;
  /** What the test generated, for its failure messages. */
  private final Object described;
  private final Socket[] plain;
  private final Socket[] talk;
  private final int[] sent;
  private final long[] next;
  private volatile boolean stopping;
  private volatile Throwable failure;
  private final CountDownLatch firstBytes = new CountDownLatch(1);
  /** Rogues cut off and connected again, ever. */
  private final AtomicInteger reconnected = new AtomicInteger();

  /** @param deadline the fabric's handshake deadline, which cuts each rogue off */
  TricklingRogues(Pattern p, byte[] bytes, Opener opener, Duration deadline, Object described) {
    super("rogues");
    setDaemon(true);
    this.p = p;
    this.bytes = bytes;
    this.opener = opener;
    this.deadline = deadline;
    this.described = described;
    plain = new Socket[p.rogues()];
    talk = new Socket[p.rogues()];
    sent = new int[p.rogues()];
    next = new long[p.rogues()];
  }

  @Override
  public void run() {
    try {
      for (int i = 0; i < plain.length; i++) open(i);
      while (!stopping) {
        long now = System.nanoTime();
        for (int i = 0; i < plain.length; i++) {
          if (talk[i] == null || now < next[i]) continue;
          int burst = sent[i] == 0 ? p.firstBurst() : p.burst();
          int n = Math.min(burst, Math.min(bytes.length, p.stopAfter()) - sent[i]);
          try {
            if (n > 0) {
              talk[i].getOutputStream().write(bytes, sent[i], n);
              talk[i].getOutputStream().flush();
              sent[i] += n;
            } else if (closed(talk[i])) { // silent now: cut off yet?
              throw new IOException("closed");
            }
          } catch (IOException cut) {
            close(plain[i]);
            talk[i] = null;
            if (p.reconnect() && !stopping) {
              open(i);
              reconnected.incrementAndGet();
            }
            continue;
          }
          next[i] = now + p.pauseMillis() * 1_000_000L;
        }
        firstBytes.countDown();
        Thread.sleep(2);
      }
    } catch (Throwable e) {
      failure = e;
    } finally {
      for (Socket s : plain) if (s != null) close(s);
    }
  }

  private void open(int i) throws IOException {
    Socket[] opened = opener.open();
    plain[i] = opened[0];
    talk[i] = opened[1];
    sent[i] = 0;
    next[i] = System.nanoTime();
  }

  /** Whether our side closed {@code s}: what it sent is read, the end seen without waiting. */
  private static boolean closed(Socket s) {
    try {
      s.setSoTimeout(1);
      InputStream in = s.getInputStream();
      byte[] b = new byte[4096];
      while (true) {
        if (in.read(b) < 0) return true;
      }
    } catch (java.net.SocketTimeoutException open) {
      return false;
    } catch (IOException reset) {
      return true;
    }
  }

  /** Until each rogue sent its first bytes (or chose to send none). */
  void awaitFirstBytes() throws InterruptedException {
    if (!firstBytes.await(10, TimeUnit.SECONDS)) check();
  }

  /** Until every rogue was cut off and connected again (within {@code deadlines} deadlines). */
  void awaitReconnected(int deadlines) throws InterruptedException {
    long until = System.nanoTime() + deadlines * deadline.toNanos();
    int from = reconnected.get();
    while (reconnected.get() - from < p.rogues() && System.nanoTime() < until) {
      check();
      Thread.sleep(1);
    }
    if (reconnected.get() - from < p.rogues()) {
      throw new AssertionError("the rogues were not all cut off within their deadline: "
          + described);
    }
  }

  void check() {
    if (failure != null) throw new AssertionError("the rogues failed", failure);
  }

  void finish() throws InterruptedException {
    stopping = true;
    join(10_000);
    check();
  }

  static void close(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // gone
    }
  }
}
