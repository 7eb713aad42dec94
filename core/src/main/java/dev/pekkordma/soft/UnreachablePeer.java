package dev.pekkordma.soft;

/** A GID nobody answers for: every request is lost, so RC requesters time out. */
final class UnreachablePeer implements SoftPeer {
  static final UnreachablePeer INSTANCE = new UnreachablePeer();

  @Override
  public boolean synchronous() {
    return true;
  }

  @Override
  public void request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    response.psn = header.psn;
    response.code = Response.DROPPED;
  }

  @Override
  public void datagram(SoftQp requester, RequestHeader header, Segments payload) {}
}
