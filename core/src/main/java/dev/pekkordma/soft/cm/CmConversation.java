package dev.pekkordma.soft.cm;

import static dev.pekkordma.soft.cm.CmChecks.millis;
import static dev.pekkordma.soft.cm.CmChecks.ECONNRESET;
import static dev.pekkordma.soft.cm.CmChecks.EHOSTUNREACH;
import static dev.pekkordma.soft.cm.CmChecks.EPROTO;
import static dev.pekkordma.soft.cm.CmChecks.ETIMEDOUT;

import dev.pekkordma.cm.CmEvent;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of a CM id, on the connection's own thread: the active side's TCP connect,
 * TLS handshake and REQ, then every message the peer sends until the connection ends, each
 * checked against the id's state before it is acted on. CmState stays the id's, under its monitor.
 */
final class CmConversation {
  private static final Logger log = LoggerFactory.getLogger(CmConversation.class);
  private final SoftCmId id;

  CmConversation(SoftCmId id) {
    this.id = id;
  }

  void runActive(Socket s, InetSocketAddress to) {
    try {
      s.connect(to, millis(id.support.connectTimeout()));
      s.setTcpNoDelay(true);
    } catch (IOException e) {
      synchronized (id) {
        if (id.state != CmState.CONNECTING) return; // closed or timed out meanwhile
        if (e instanceof SocketTimeoutException) {
          id.end(CmState.UNREACHABLE, -ETIMEDOUT, null, null);
        } else if (e instanceof ConnectException && !String.valueOf(e.getMessage())
            .contains("timed out")) {
          // a TCP reset: nothing listens on the port, which the IB CM reports as this reason
          id.end(CmState.REJECTED, CmEvent.REJECT_NO_LISTENER, null, null);
        } else {
          id.end(CmState.UNREACHABLE, -EHOSTUNREACH, null, null);
        }
      }
      return;
    }
    String peer = CmSocket.describe(to);
    CmSocket c;
    try {
      c = CmSocket.over(id.resources.tls.client(s, "CM peer " + peer));
    } catch (IOException e) {
      synchronized (id) {
        if (id.state != CmState.CONNECTING) return; // the deadline or a close broke the handshake
        log.warn("soft CM: connecting to {} failed: {}", peer, e.getMessage());
        id.end(CmState.CONNECT_ERROR, e instanceof SSLException ? -EPROTO : -ECONNRESET, null,
            null);
      }
      return;
    }
    synchronized (id) {
      if (id.state != CmState.CONNECTING) {
        c.close();
        return;
      }
      id.conn = c;
      try {
        c.send(CmMessage.req(id.qp == null ? 0 : id.qp.qpNum(), id.psn, id.support.gid(id.verbs),
            id.activeMtu(), id.ours));
      } catch (IOException e) {
        id.end(CmState.CONNECT_ERROR, -ECONNRESET, null, null);
        return;
      }
    }
    readLoop(c);
  }

  /** Reads the connection's frames until it ends; the connection's thread runs it. */
  void readLoop(CmSocket c) {
    try {
      while (received(c.read())) {
        // next message
      }
    } catch (IOException e) {
      lost(c, e);
    } catch (RuntimeException e) {
      // a fault of ours; the application still hears that the connection is gone
      log.error("soft CM {}: reading the connection from {} failed", CmSocket.describe(id.local),
          c.peer, e);
      lost(c, new IOException(e.toString(), e));
    } finally {
      c.close();
    }
  }

  /**
   * Handles one message; false when the conversation is over. A message the state does not
   * expect is a ProtocolException: the peer broke the protocol.
   */
  private boolean received(CmMessage m) throws ProtocolException {
    synchronized (id) {
      return receivedLocked(m);
    }
  }

  private boolean receivedLocked(CmMessage m) throws ProtocolException {
    CmMessage.Kind k = m.kind();
    switch (id.state) {
      case CONNECTING:
        if (k == CmMessage.Kind.REP) return id.replied(m);
        if (k == CmMessage.Kind.REJ) {
          id.end(CmState.REJECTED, m.reason(), m.privateData(), null);
          return false;
        }
        break;
      case CONNECT_REQUEST:
      case ACCEPTING:
        if (k == CmMessage.Kind.RTU && id.state == CmState.ACCEPTING) return id.readyToUse();
        if (k == CmMessage.Kind.REJ) { // the requester gave up or could not use our REP
          id.end(CmState.REJECTED, m.reason(), m.privateData(), null);
          return false;
        }
        break;
      case ESTABLISHED:
        if (k == CmMessage.Kind.DREQ) {
          id.trySend(CmMessage.bare(CmMessage.Kind.DREP));
          id.disconnected();
          return true; // the requester closes on DREP
        }
        break;
      case DISCONNECTING:
        if (k == CmMessage.Kind.DREQ) { // both sides disconnected at once
          id.trySend(CmMessage.bare(CmMessage.Kind.DREP));
          id.disconnected();
          return true;
        }
        if (k == CmMessage.Kind.DREP) {
          id.disconnected();
          return false;
        }
        break;
      case DISCONNECTED:
        if (k == CmMessage.Kind.DREP) return false; // both sides disconnected at once
        if (k == CmMessage.Kind.DREQ && !id.answeredLateDreq) {
          // one more DREQ is answered, as the IB CM answers a repeated one; an endless stream
          // of them would have us write to a peer that need not read
          id.answeredLateDreq = true;
          id.trySend(CmMessage.bare(CmMessage.Kind.DREP));
          return true;
        }
        break;
      default:
        return false; // the connection is over for this id
    }
    throw new ProtocolException("unexpected " + k + " in state " + id.state);
  }

  /**
   * The TCP connection broke or the peer broke the protocol (or TLS): the peer is gone. What
   * the peer did wrong is logged; a connection that simply ends is an event, not a warning.
   */
  private void lost(CmSocket c, IOException e) {
    synchronized (id) {
      lostLocked(c, e);
    }
  }

  private void lostLocked(CmSocket c, IOException e) {
    boolean live = id.state == CmState.CONNECTING || id.state == CmState.CONNECT_REQUEST
        || id.state == CmState.ACCEPTING || id.state == CmState.ESTABLISHED
        || id.state == CmState.DISCONNECTING;
    if (e instanceof ProtocolException && id.state != CmState.DESTROYED) {
      log.warn("soft CM {}: refused a frame from {}: {}; the connection ends",
          CmSocket.describe(id.local), c.peer, e.getMessage());
    } else if (e instanceof SSLException && live) {
      log.warn("soft CM {}: TLS with {} failed: {}; the connection ends",
          CmSocket.describe(id.local), c.peer, e.getMessage());
    }
    switch (id.state) {
      case CONNECTING:
      case CONNECT_REQUEST:
      case ACCEPTING:
        id.end(CmState.CONNECT_ERROR, e instanceof ProtocolException || e instanceof SSLException
            ? -EPROTO : -ECONNRESET, null, null);
        break;
      case ESTABLISHED:
      case DISCONNECTING:
        id.closeSocket();
        id.disconnected();
        break;
      default:
        break;
    }
  }
}
