package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;

/** A GID nobody answers for: every request is lost, so RC requesters time out. */
final class UnreachablePeer implements SoftPeer {
  static final UnreachablePeer INSTANCE = new UnreachablePeer();

  @Override
  public int request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    response.psn = header.psn;
    response.code = Response.DROPPED;
    return SENT;
  }

  @Override
  public int datagram(SoftQp requester, RequestHeader header, Segments payload) {
    return SENT;
  }

  @Override
  public String describe(Gid gid) {
    return gid + ", which no soft device answers for";
  }
}
