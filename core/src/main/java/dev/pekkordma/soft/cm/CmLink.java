package dev.pekkordma.soft.cm;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One TCP connection (over TLS when it is on) between the CMs of two processes, carrying the
 * conversations (CM connections) of many ids, each frame naming its conversation. The active side
 * opens one per listener it connects to and shares it among its ids ({@link CmLinks}); the
 * passive side accepts it ({@link CmListener}). So a thousand connections between two processes
 * cost one socket and two threads a side, not a thousand.
 *
 * <p>One thread reads and hands each frame to its conversation; one writes what the ids queue, so
 * an id never waits on a peer: a peer that lets more than {@value #MAX_QUEUED} bytes wait unread
 * is cut off. The link's first {@value #FIRST_FRAMES} bytes of frames are the exception: their
 * senders write them, as a fresh socket takes that much whatever the peer does, so that a new
 * link's first connection does not wait for the writer's thread to wake (each such hand-off costs
 * up to milliseconds on a busy machine). When the link breaks, every conversation on it has lost
 * its peer.
 */
final class CmLink {
  private static final Logger log = LoggerFactory.getLogger(CmLink.class);
  /** Frames waiting for a peer that does not read: more, and the link is cut. */
  static final int MAX_QUEUED = 1 << 20;
  /**
   * At most this much of a link's first frames is written by the thread that sends them, not
   * handed to the writer's: a fresh socket takes that much without blocking, whatever the peer.
   */
  private static final int FIRST_FRAMES = 4096;

  /** One conversation's side of the link; called on the reading thread, no lock of the link held. */
  interface Conversation {
    /** Handles one message; false when the conversation is over. */
    boolean received(CmMessage m) throws ProtocolException;

    /** The link broke, could not be opened ({@link OpenFailed}), or the peer broke the protocol. */
    void lost(IOException why);

    /** The active side's link is up: the conversation may send its REQ. */
    default void linkUp() {}
  }

  /** A passive link's handler of REQs that open new conversations. */
  interface Requests {
    /** Registers the conversation that takes {@code req} ({@link #register}), or answers REJ. */
    void request(CmLink link, int conversation, CmMessage req);
  }

  /** The active side could not open the link: the TCP connect or the TLS handshake failed. */
  static final class OpenFailed extends IOException {
    final boolean handshake;

    OpenFailed(IOException cause, boolean handshake) {
      super(cause.getMessage(), cause);
      this.handshake = handshake;
    }
  }

  final String peer;
  private final boolean active;
  private final Requests requests;
  private final ConcurrentHashMap<Integer, Conversation> conversations = new ConcurrentHashMap<>();
  private final AtomicInteger numbers = new AtomicInteger();
  /** The active side's conversations whose REQ waits for the link to come up. */
  private final java.util.Set<Conversation> waiting = ConcurrentHashMap.newKeySet();
  /** The passive side: the highest conversation a REQ opened (numbers only go up). */
  private int lastRequested;
  private final CmResources resources;
  // guarded by outbox
  private final ArrayDeque<byte[]> outbox = new ArrayDeque<>();
  private long queued;
  private boolean closing; // no conversation left: written out, then the link ends
  private boolean gone;
  private boolean writing; // one thread at a time writes the socket
  private int writtenDirectly; // bytes of the first frames written by their senders
  private volatile CmSocket socket;
  private IOException brokenFirst; // the passive side's first REQ, taken on another thread

  private CmLink(String peer, boolean active, Requests requests, CmResources resources) {
    this.peer = peer;
    this.active = active;
    this.requests = requests;
    this.resources = resources;
  }

  static CmLink active(InetSocketAddress remote, CmResources resources) {
    return new CmLink(CmSocket.describe(remote), true, null, resources);
  }

  static CmLink passive(CmSocket socket, Requests requests, CmResources resources) {
    CmLink l = new CmLink(socket.peer, false, requests, resources);
    l.socket = socket;
    return l;
  }

  InetSocketAddress localAddress() {
    return (InetSocketAddress) socket.socket.getLocalSocketAddress();
  }

  InetSocketAddress remoteAddress() {
    return (InetSocketAddress) socket.socket.getRemoteSocketAddress();
  }

  /** An active link's conversation waits for the link, to send its REQ ({@link #request}). */
  void join(Conversation c) {
    waiting.add(c);
  }

  /**
   * Sends the REQ that opens {@code c}'s conversation, numbered now, so that numbers go out in
   * order (the passive side refuses one that does not go up); returns the number.
   */
  int request(Conversation c, CmMessage req) {
    int n;
    byte[] now;
    synchronized (outbox) {
      n = numbers.incrementAndGet();
      conversations.put(n, c);
      waiting.remove(c);
      now = queueOrTake(req.encode(n));
    }
    if (now != null) writeNow(now);
    return n;
  }

  /** A passive link's new conversation, under the number the peer's REQ gave it. */
  void register(int n, Conversation c) {
    conversations.put(n, c);
  }

  /** The conversation is over on this side; later frames for it are dropped. */
  void forget(Conversation c, int n) {
    waiting.remove(c);
    if (n != 0) conversations.remove(n, c);
  }

  boolean idle() {
    return conversations.isEmpty() && waiting.isEmpty();
  }

  /** Whether a conversation may still join (the active side): not closing, not broken. */
  boolean usable() {
    synchronized (outbox) {
      return !closing && !gone;
    }
  }

  /** Queues {@code m} for the peer; a link that is gone drops it (its loss is reported). */
  void send(int conversation, CmMessage m) {
    byte[] now;
    synchronized (outbox) {
      now = queueOrTake(m.encode(conversation));
    }
    if (now != null) writeNow(now);
  }

  /**
   * Under the outbox's lock: {@code frame} back when the sender may write it itself (one of the
   * link's first frames, nothing waiting before it, nobody writing), else null, queued.
   */
  private byte[] queueOrTake(byte[] frame) {
    // an interrupted thread would close the socket under the link (a channel's, when active)
    if (socket != null && !gone && !closing && !writing && outbox.isEmpty()
        && writtenDirectly + frame.length <= FIRST_FRAMES
        && !Thread.currentThread().isInterrupted()) {
      writing = true;
      writtenDirectly += frame.length;
      return frame;
    }
    enqueue(frame);
    return null;
  }

  /** Writes what {@link #queueOrTake} gave this thread, saving a hand-off to the writer. */
  private void writeNow(byte[] frame) {
    try {
      socket.write(frame, true);
    } catch (IOException e) {
      socket.close(); // the reader reports it
    } finally {
      doneWriting();
    }
  }

  private void doneWriting() {
    synchronized (outbox) {
      writing = false;
      outbox.notifyAll();
    }
  }

  private void enqueue(byte[] frame) {
    if (gone) return;
    if (queued + frame.length <= MAX_QUEUED) {
      outbox.add(frame);
      queued += frame.length;
      outbox.notifyAll();
      return;
    }
    log.warn("soft CM: {} does not read what the CM sends it ({} bytes waiting); the link to it"
        + " and its {} connection(s) end", peer, MAX_QUEUED, conversations.size());
    gone = true;
    outbox.notifyAll();
    CmSocket s = socket;
    if (s != null) s.reset();
  }

  /**
   * No conversation is left (the active side): what is queued goes out, then the link ends, once
   * the peer closes its end too, or after the connect timeout if it never does.
   */
  void close() {
    synchronized (outbox) {
      closing = true;
      outbox.notifyAll();
    }
    boundTheWait();
  }

  /** A closing link waits at most the connect timeout for the peer's end. */
  private void boundTheWait() {
    CmSocket s = socket;
    if (s == null || !closedQuietly()) return;
    try {
      s.socket.setSoTimeout(CmChecks.millis(resources.connectTimeout));
    } catch (java.net.SocketException e) {
      // closed already
    }
  }

  /** Ends the link at once with a TCP reset, as a process that dies would. */
  void reset() {
    CmSocket s = socket;
    synchronized (outbox) {
      gone = true;
      outbox.notifyAll();
    }
    if (s != null) s.reset();
  }

  /**
   * Takes the dialled socket as the link's at once when its connect has finished already and
   * there is no TLS handshake to run: true when the link is up now.
   */
  boolean openNow(CmDial dial) {
    if (!dial.connected() || resources.tls.enabled()) return false;
    try {
      socket = CmSocket.over(dial.finish(0));
      return true;
    } catch (IOException e) {
      return false; // the link's thread meets it again and reports it
    }
  }

  /**
   * The active side's opening, on a thread of its own that then reads the link: what {@link
   * #openNow} left, the connect and the TLS handshake.
   */
  void runActive(CmDial dial, Runnable opened, Runnable ended) {
    if (socket == null) {
      java.net.Socket raw;
      try {
        raw = dial.finish(CmChecks.millis(resources.connectTimeout));
      } catch (IOException e) {
        failOpening(new OpenFailed(e, false), ended);
        dial.close();
        return;
      }
      try {
        socket = CmSocket.over(resources.tls.client(raw, "CM peer " + peer));
      } catch (IOException e) {
        log.warn("soft CM: connecting to {} failed: {}", peer, e.getMessage());
        failOpening(new OpenFailed(e, true), ended);
        return;
      }
      boundTheWait(); // closed while it opened
      opened.run();
    }
    for (Conversation w : new ArrayList<>(waiting)) w.linkUp();
    writeFirstFrames();
    if (!resources.startWriter("soft-cm-write-" + peer, this::writeLoop)) {
      failOpening(new OpenFailed(new IOException(resources.refusal()), false), ended);
      socket.close();
      return;
    }
    readLoop(null, () -> { }, ended);
  }

  /**
   * The REQs that waited for the link go out from the thread that opened it, not after the
   * writer's thread has started: a fresh socket takes a few frames without blocking. Many
   * waiting frames are left to the writer, which may wait on a slow peer.
   */
  private void writeFirstFrames() {
    List<byte[]> batch;
    synchronized (outbox) {
      if (gone || writing || outbox.isEmpty() || queued > FIRST_FRAMES) return;
      batch = new ArrayList<>(outbox);
      outbox.clear();
      queued = 0;
      writing = true;
    }
    try {
      for (int i = 0; i < batch.size(); i++) socket.write(batch.get(i), i == batch.size() - 1);
    } catch (IOException e) {
      socket.close(); // the reader reports it
    } finally {
      doneWriting();
    }
  }

  private void failOpening(OpenFailed why, Runnable ended) {
    synchronized (outbox) {
      gone = true;
      outbox.notifyAll();
    }
    ended.run();
    loseAll(why);
  }

  /**
   * The passive side: {@code first} (the REQ the listener read) is handled, the writer starts,
   * then the link is read until it ends.
   */
  void runPassive(CmMessage.Framed first) {
    readLoop(first, this::startPassiveWriter, () -> { });
  }

  /**
   * The passive side, its first REQ read on the listener's thread already, which hands it to the
   * listening id now ({@link #readOn} reads the rest, on a thread of its own).
   */
  void takeFirst(CmMessage.Framed first) {
    try {
      dispatch(first);
    } catch (ProtocolException e) {
      brokenFirst = e;
      return;
    } catch (RuntimeException e) {
      log.error("soft CM: taking the first request from {} failed", peer, e);
      brokenFirst = new IOException(e.toString(), e);
      return;
    }
    startPassiveWriter();
  }

  /** After {@link #takeFirst}: the link is read until it ends. */
  void readOn() {
    if (brokenFirst != null) {
      end(brokenFirst, () -> { });
    } else {
      readLoop(null, () -> { }, () -> { });
    }
  }

  /** Ends a link no thread will read: its conversations have lost it. */
  void abandon(IOException why) {
    end(why, () -> { });
  }

  /** Once the first REQ is on its way to the listening id: its answer waits for this writer. */
  private void startPassiveWriter() {
    if (!resources.startWriter("soft-cm-write-" + peer, this::writeLoop)) {
      log.warn("soft CM: dropped the link from {}: {}", peer, resources.refusal());
      socket.close(); // the reader ends, and the conversation the REQ opened has lost its peer
    }
  }

  private void readLoop(CmMessage.Framed first, Runnable afterFirst, Runnable ended) {
    CmSocket c = socket;
    IOException why;
    try {
      dispatch(first != null ? first : c.read());
      afterFirst.run();
      while (true) dispatch(c.read());
    } catch (IOException e) {
      why = e;
    } catch (RuntimeException e) {
      // a fault of ours; the ids still hear that their peer is gone
      log.error("soft CM: reading the link from {} failed", peer, e);
      why = new IOException(e.toString(), e);
    }
    end(why, ended);
  }

  /** The link is read no more, for {@code why}: it closes, and its conversations have lost it. */
  private void end(IOException why, Runnable ended) {
    CmSocket c = socket;
    if (closedQuietly()) {
      // closed by us after the last conversation: what the peer still sent matters to nobody
    } else if (why instanceof ProtocolException) {
      log.warn("soft CM: refused a frame from {}: {}; the link and its {} connection(s) end",
          peer, why.getMessage(), conversations.size());
    } else if (why instanceof SSLException && !conversations.isEmpty()) {
      log.warn("soft CM: TLS with {} failed: {}; the link ends", peer, why.getMessage());
    }
    synchronized (outbox) {
      gone = true;
      outbox.notifyAll();
    }
    c.close();
    ended.run();
    loseAll(why);
  }

  private void dispatch(CmMessage.Framed f) throws ProtocolException {
    if (closedQuietly()) return; // no conversation left to hear it
    int n = f.conversation();
    CmMessage m = f.message();
    Conversation c = conversations.get(n);
    if (c == null) {
      if (m.kind() != CmMessage.Kind.REQ) return; // a late frame of a conversation that ended
      if (active) throw new ProtocolException("a REQ on a link this side opened");
      if (Integer.compareUnsigned(n, lastRequested) <= 0) {
        throw new ProtocolException("a REQ for conversation " + Integer.toUnsignedString(n)
            + " after one for " + Integer.toUnsignedString(lastRequested)
            + " (each REQ opens a conversation numbered above the last)");
      }
      lastRequested = n;
      requests.request(this, n, m);
      return;
    }
    // a message out of place ends the link: the peer broke the protocol, and every connection
    // it has with us goes (a link carries one peer process's connections only)
    if (!c.received(m)) conversations.remove(n, c);
  }

  /** The active side closed the link after its last conversation. */
  private boolean closedQuietly() {
    synchronized (outbox) {
      return closing && idle();
    }
  }

  private void loseAll(IOException why) {
    List<Conversation> lost = new ArrayList<>(conversations.values());
    lost.addAll(waiting);
    conversations.clear();
    waiting.clear();
    for (Conversation c : lost) c.lost(why);
  }

  private void writeLoop() {
    List<byte[]> batch = new ArrayList<>();
    try {
      while (true) {
        synchronized (outbox) {
          while ((writing || outbox.isEmpty() && !closing) && !gone) outbox.wait();
          if (gone || outbox.isEmpty()) break; // broken, or closing with everything written
          batch.addAll(outbox);
          outbox.clear();
          queued = 0;
          writing = true;
        }
        try {
          for (int i = 0; i < batch.size(); i++) {
            socket.write(batch.get(i), i == batch.size() - 1);
          }
        } finally {
          doneWriting();
        }
        batch.clear();
      }
      synchronized (outbox) {
        if (gone) return;
      }
      socket.shutdownOutput(); // closing: the peer reads the rest, then the end
    } catch (IOException e) {
      socket.close(); // the reader reports it
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "CmLink(" + (active ? "to " : "from ") + peer + ", " + conversations.size()
        + " conversations)";
  }
}
