package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;

/** A device in another process, reached through this process's link to that process. */
final class RemotePeer implements SoftPeer {
  private final FabricLink link;
  private final int device; // the device's serial in its process

  RemotePeer(FabricLink link, Gid gid) {
    this.link = link;
    this.device = TcpFabric.serialOf(gid);
  }

  FabricLink link() {
    return link;
  }

  @Override
  public boolean synchronous() {
    return false;
  }

  @Override
  public SoftEngine engine(SoftDevice requesterDevice) {
    return link.engine();
  }

  @Override
  public int request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    return link.send(FabricWire.REQUEST, requester, device, header, payload);
  }

  @Override
  public int datagram(SoftQp requester, RequestHeader header, Segments payload) {
    return link.send(FabricWire.DATAGRAM, requester, device, header, payload);
  }

  @Override
  public void attach(SoftQp qp) {
    link.attach(qp);
  }

  @Override
  public void detach(SoftQp qp) {
    link.detach(qp);
  }

  @Override
  public String describe(Gid gid) {
    return "device " + device + " of the process at " + link.name() + link.lastFailure();
  }
}
