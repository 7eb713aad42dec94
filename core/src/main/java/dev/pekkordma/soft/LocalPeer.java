package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;

/** A device of this JVM: requests run straight against the responder QP, in the caller's thread. */
final class LocalPeer implements SoftPeer {
  private final SoftDevice device;
  private final ThreadLocal<MemoryPayload> payloads = ThreadLocal.withInitial(MemoryPayload::new);
  /** UC messages have no answer: a throwaway response per thread. */
  private final ThreadLocal<Response> unanswered = ThreadLocal.withInitial(Response::new);

  LocalPeer(SoftDevice device) {
    this.device = device;
  }

  @Override
  public int request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    SoftQp responder = device.qps.get(header.destQpn);
    if (responder == null) {
      response.psn = header.psn;
      response.code = Response.DROPPED;
      return SENT;
    }
    MemoryPayload data = payloads.get().of(payload);
    responder.responder.handleRequest(header, data, response, false);
    return data.sourceGone() ? SOURCE_GONE : SENT;
  }

  @Override
  public int datagram(SoftQp requester, RequestHeader header, Segments payload) {
    SoftQp responder = device.qps.get(header.destQpn);
    if (responder == null) return SENT;
    MemoryPayload data = payloads.get().of(payload);
    if (responder.type == dev.pekkordma.verbs.QpType.UD) {
      responder.responder.handleDatagram(header, data);
    } else {
      responder.responder.handleRequest(header, data, unanswered.get(), true);
    }
    return data.sourceGone() ? SOURCE_GONE : SENT;
  }

  @Override
  public String describe(Gid gid) {
    return device.info.name() + " in this process (" + gid + ")";
  }
}
