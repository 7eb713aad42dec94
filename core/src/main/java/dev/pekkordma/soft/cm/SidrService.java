package dev.pekkordma.soft.cm;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.PortUnreachableException;
import java.net.ProtocolException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the UDP sockets of a provider's RDMA_PS_UDP ids (each from its bind or resolve until
 * its destruction) for SIDR messages on one thread, started with the first and ended with the
 * provider. Every datagram is checked ({@link SidrMessage#parse}) before its id hears of it;
 * one that is not a valid message is dropped and logged (at most a few a second), and nothing
 * a peer sends ends the thread.
 */
final class SidrService {
  private static final Logger log = LoggerFactory.getLogger(SidrService.class);

  /** An id's side: called on the service's thread, no lock of the service held. */
  interface SidrSide {
    void received(SidrMessage m, InetSocketAddress from);

    /** The peer's host said no socket has the port (ICMP port unreachable). */
    default void unreachable() {}
  }

  private final ConcurrentLinkedQueue<Runnable> changes = new ConcurrentLinkedQueue<>();
  private final AtomicLong refusedTotal = new AtomicLong();
  private long windowStart;
  private int inWindow;
  private Selector selector; // guarded by this
  private boolean closed; // guarded by this

  /**
   * Reads {@code ch} (bound; connected for a requester) for {@code e} until {@link #stop}. The
   * channel is non-blocking before this returns: switched later, on the service's thread, it
   * raced the id's connect, and the JDK's connect of a channel it still finds blocking makes the
   * socket blocking again as it ends; the service's thread then blocked in a read, and the id's
   * close waited for it for ever.
   */
  void watch(DatagramChannel ch, SidrSide e) throws IOException {
    Selector s = selector();
    ch.configureBlocking(false);
    changes.add(() -> {
      try {
        ch.register(s, SelectionKey.OP_READ, e);
      } catch (IOException | RuntimeException x) {
        log.debug("soft CM: cannot read a SIDR socket: {}", x.toString());
      }
    });
    s.wakeup();
  }

  /** Stops reading {@code ch}; it stays open. */
  void stop(DatagramChannel ch) {
    Selector s;
    synchronized (this) {
      s = selector;
    }
    if (s == null) return;
    changes.add(() -> {
      SelectionKey k = ch.keyFor(s);
      if (k != null) k.cancel();
    });
    s.wakeup();
  }

  /** SIDR datagrams refused so far (for tests). */
  long refused() {
    return refusedTotal.get();
  }

  private synchronized Selector selector() throws IOException {
    if (closed) throw new ClosedChannelException();
    if (selector == null) {
      Selector s = Selector.open();
      selector = s;
      Thread t = CmChecks.daemon("soft-cm-sidr", () -> loop(s));
      t.start();
    }
    return selector;
  }

  void shutdown() {
    Selector s;
    synchronized (this) {
      closed = true;
      s = selector;
      selector = null;
    }
    if (s != null) {
      try {
        s.close();
      } catch (IOException e) {
        // closing is all we wanted
      }
    }
  }

  private void loop(Selector s) {
    ByteBuffer buffer = ByteBuffer.allocate(SidrMessage.MAX_BYTES + 1); // one more: too long shows
    while (s.isOpen()) {
      try {
        s.select();
        for (Runnable r; (r = changes.poll()) != null; ) r.run();
        for (SelectionKey k : s.selectedKeys()) serve(k, buffer);
        s.selectedKeys().clear();
      } catch (IOException | java.nio.channels.ClosedSelectorException e) {
        if (!s.isOpen()) return;
        log.debug("soft CM: SIDR select failed: {}", e.toString());
      } catch (RuntimeException e) {
        log.error("soft CM: serving SIDR sockets failed", e); // ours: keep serving the others
      }
    }
  }

  private void serve(SelectionKey k, ByteBuffer buffer) {
    if (!k.isValid() || !k.isReadable()) return;
    DatagramChannel ch = (DatagramChannel) k.channel();
    SidrSide e = (SidrSide) k.attachment();
    for (int i = 0; i < 64; i++) { // a few at a time, so a flood on one socket starves no other
      buffer.clear();
      InetSocketAddress from;
      try {
        if (ch.isConnected()) {
          if (ch.read(buffer) <= 0) return;
          from = (InetSocketAddress) ch.getRemoteAddress();
        } else {
          SocketAddress a = ch.receive(buffer);
          if (a == null) return;
          from = (InetSocketAddress) a;
        }
      } catch (PortUnreachableException x) {
        e.unreachable(); // the socket stays readable: its id may still be asked
        return;
      } catch (IOException x) {
        k.cancel(); // closed by its id meanwhile
        return;
      }
      buffer.flip();
      SidrMessage m;
      try {
        m = SidrMessage.parse(buffer.array(), buffer.limit());
      } catch (ProtocolException x) {
        refuse(from, x.getMessage());
        continue;
      }
      try {
        e.received(m, from);
      } catch (RuntimeException x) {
        log.error("soft CM: handling {} from {} failed", m, from, x);
      }
    }
  }

  private void refuse(InetSocketAddress from, String why) {
    refusedTotal.incrementAndGet();
    long now = System.nanoTime();
    if (now - windowStart > 1_000_000_000L) {
      windowStart = now;
      inWindow = 0;
    }
    if (++inWindow <= 20) {
      log.warn("soft CM: refused a SIDR datagram from {}: {}", CmSocket.describe(from), why);
    }
  }
}
