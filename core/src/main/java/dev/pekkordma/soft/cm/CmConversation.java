package dev.pekkordma.soft.cm;

import static dev.pekkordma.verbs.RdmaException.ECONNRESET;
import static dev.pekkordma.verbs.RdmaException.EHOSTUNREACH;
import static dev.pekkordma.verbs.RdmaException.EPROTO;
import static dev.pekkordma.verbs.RdmaException.ETIMEDOUT;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ConnectException;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A CM id's conversation on its {@link CmLink}: its place there (the link, its number, joining and
 * leaving), every message the peer sends for it, checked against the id's state before it is
 * acted on, and the link's loss. CmState stays the id's, and so does this one's state, under the
 * id's monitor; the link's reading thread calls in.
 */
final class CmConversation implements CmLink.Conversation {
  private static final Logger log = LoggerFactory.getLogger(CmConversation.class);
  private final SoftCmId id;
  // guarded by the id's monitor
  private CmLink link;
  private int number; // 0 until the active side's REQ is numbered
  private boolean outgoing;
  private boolean requestSent;

  CmConversation(SoftCmId id) {
    this.id = id;
  }

  /**
   * The active side: counted against max-connections (EAGAIN past it, for {@code verb}) and
   * joined to the link from {@code local} to {@code to}; true when that link is up already.
   */
  boolean join(String verb, InetAddress local, InetSocketAddress to) {
    CmResources r = id.resources;
    if (link != null) return r.outgoing.isUp(link); // prepared
    if (!r.openConversation()) {
      throw new RdmaException(verb, RdmaException.EAGAIN, "cannot connect to "
          + CmSocket.describe(to) + ": " + r.refusal());
    }
    CmLinks.JoinedLink joined;
    try {
      joined = r.outgoing.join(local, to, this);
    } catch (RuntimeException e) {
      r.closeConversation();
      throw e;
    }
    link = joined.link();
    number = 0;
    outgoing = true;
    requestSent = false;
    return joined.up();
  }

  /**
   * Joins the link to {@code to} ahead of the connect, so that it is open by then; when that
   * cannot be, nothing happens now: the connect joins again and says why.
   */
  void prepare(InetAddress local, InetSocketAddress to) {
    if (link != null) return;
    try {
      join("rdma_resolve_addr", local, to);
    } catch (RuntimeException e) {
      log.debug("opening the CM link to {} ahead of the connect: {}", to, e.getMessage());
    }
  }

  /** The passive side: conversation {@code n} on {@code l}, which the peer's REQ opened. */
  void adopt(CmLink l, int n) {
    link = l;
    number = n;
    outgoing = false;
    l.register(n, this);
  }

  /** Whether the active side's REQ is still to go. */
  boolean requestDue() {
    return link != null && !requestSent;
  }

  /** Sends the REQ, which numbers the conversation. */
  void request(CmMessage req) {
    requestSent = true;
    number = link.request(this, req);
  }

  /** Queues {@code m} for the peer; a peer that is gone shows when its link breaks. */
  void send(CmMessage m) {
    if (link != null && number != 0) link.send(number, m);
  }

  /** Resets the link, as a process that dies would (for tests). */
  void reset() {
    if (link != null) link.reset();
  }

  /** The conversation is over on this side: the link forgets it (and may close). */
  void leave() {
    CmLink l = link;
    if (l == null) return;
    link = null;
    if (outgoing) {
      id.resources.outgoing.leave(l, this, number);
    } else {
      l.forget(this, number);
    }
    id.resources.closeConversation();
  }

  @Override
  public void linkUp() {
    id.linkUp();
  }

  /**
   * Handles one message; false when the conversation is over. A message the state does not
   * expect is a ProtocolException: the peer broke the protocol.
   */
  @Override
  public boolean received(CmMessage m) throws ProtocolException {
    synchronized (id) {
      boolean more = receivedLocked(m);
      if (!more) id.leaveLink();
      return more;
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
   * The link broke, could not be opened, or the peer broke the protocol (or TLS): the peer is
   * gone. The link logs what the peer did wrong; a link that simply ends is an event.
   */
  @Override
  public void lost(IOException e) {
    synchronized (id) {
      lostLocked(e);
      id.leaveLink();
    }
  }

  private void lostLocked(IOException e) {
    if (e instanceof CmLink.OpenFailed f) {
      if (id.state == CmState.CONNECTING) openFailed(f);
      return;
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

  /** The link for our REQ could not be had: as the kernel CM reports such a connect. */
  private void openFailed(CmLink.OpenFailed f) {
    Throwable cause = f.getCause();
    if (f.handshake) {
      id.end(CmState.CONNECT_ERROR, cause instanceof SSLException ? -EPROTO : -ECONNRESET, null,
          null);
    } else if (cause instanceof SocketTimeoutException) {
      id.end(CmState.UNREACHABLE, -ETIMEDOUT, null, null);
    } else if (cause instanceof ConnectException
        && !String.valueOf(cause.getMessage()).contains("timed out")) {
      // a TCP reset: nothing listens on the port, which the IB CM reports as this reason
      id.end(CmState.REJECTED, CmEvent.REJECT_NO_LISTENER, null, null);
    } else {
      id.end(CmState.UNREACHABLE, -EHOSTUNREACH, null, null);
    }
  }
}
