package dev.pekkordma.soft;

/** A device of this JVM: requests run straight against the responder QP, in the caller's thread. */
final class LocalPeer implements SoftPeer {
  private final SoftDevice device;

  LocalPeer(SoftDevice device) {
    this.device = device;
  }

  @Override
  public boolean synchronous() {
    return true;
  }

  @Override
  public void request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    SoftQp responder = device.qps.get(header.destQpn);
    if (responder == null) {
      response.psn = header.psn;
      response.code = Response.DROPPED;
      return;
    }
    responder.handleRequest(header, payload, response);
  }

  @Override
  public void datagram(SoftQp requester, RequestHeader header, Segments payload) {
    SoftQp responder = device.qps.get(header.destQpn);
    if (responder != null) responder.handleDatagram(header, payload);
  }
}
