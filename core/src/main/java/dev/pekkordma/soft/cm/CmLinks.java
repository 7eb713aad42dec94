package dev.pekkordma.soft.cm;

import dev.pekkordma.verbs.RdmaException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;

/**
 * The links the active side's ids share: one per (local address, listener) while any
 * conversation uses it, opened by the first connect and closed after the last conversation.
 */
final class CmLinks {
  private record Key(InetAddress local, InetSocketAddress remote) {}

  /** A conversation's link, and whether the link is up already (else it calls linkUp). */
  record JoinedLink(CmLink link, boolean up) {}

  private final CmResources resources;
  private final Map<Key, CmLink> links = new HashMap<>(); // guarded by this
  private final Map<CmLink, Boolean> up = new HashMap<>(); // guarded by this

  CmLinks(CmResources resources) {
    this.resources = resources;
  }

  /**
   * Joins {@code c} to the link from {@code local} to {@code remote}, opening one if there is
   * none; fails with EAGAIN naming the setting when no thread is left for a new link.
   */
  synchronized JoinedLink join(InetAddress local, InetSocketAddress remote, CmLink.Conversation c) {
    Key key = new Key(local, remote);
    CmLink link = links.get(key);
    if (link == null || !link.usable()) {
      link = CmLink.active(remote, resources);
      CmDial dial;
      try {
        dial = CmDial.begin(local, remote);
      } catch (IOException e) {
        throw new RdmaException("rdma_connect", RdmaException.EADDRNOTAVAIL, "cannot open a CM"
            + " link from " + local.getHostAddress() + ": " + e.getMessage(), e);
      }
      CmLink opening = link;
      boolean upNow = opening.openNow(dial);
      if (!resources.start("soft-cm-link-" + opening.peer, () -> opening.runActive(dial,
          () -> opened(opening), () -> ended(key, opening)))) {
        dial.close();
        throw new RdmaException("rdma_connect", RdmaException.EAGAIN, "cannot connect to "
            + CmSocket.describe(remote) + ": " + resources.refusal());
      }
      links.put(key, link);
      up.put(link, upNow);
    }
    link.join(c);
    return new JoinedLink(link, up.get(link));
  }

  /**
   * The conversation {@code c} ({@code n}, 0 before its REQ) on {@code link} is over: the link
   * closes after its last.
   */
  synchronized void leave(CmLink link, CmLink.Conversation c, int n) {
    link.forget(c, n);
    if (link.idle() && up.containsKey(link)) {
      links.values().remove(link);
      up.remove(link);
      link.close();
    }
  }

  /** Whether {@code link}, which a conversation has joined, is open. */
  synchronized boolean isUp(CmLink link) {
    return Boolean.TRUE.equals(up.get(link));
  }

  private synchronized void opened(CmLink link) {
    if (up.containsKey(link)) up.put(link, true);
  }

  private synchronized void ended(Key key, CmLink link) {
    links.remove(key, link);
    up.remove(link);
  }

  /** Links open now (for tests). */
  synchronized int size() {
    return links.size();
  }
}
