package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;

/** A device in another process, reached through this process's link to that process. */
final class RemotePeer implements SoftPeer {
  private final TcpFabric fabric;
  private final FabricAddress address;
  private final int device; // the device's serial in its process
  private volatile FabricLink link;

  RemotePeer(TcpFabric fabric, FabricLink link, Gid gid) {
    this.fabric = fabric;
    this.address = link.address();
    this.link = link;
    this.device = TcpFabric.serialOf(gid);
  }

  /** The link to the peer's process; a new one if the last was retired (nobody used it). */
  FabricLink link() {
    FabricLink l = link;
    if (l.retired()) {
      l = fabric.link(address);
      link = l;
    }
    return l;
  }

  @Override
  public boolean synchronous() {
    return false;
  }

  @Override
  public SoftEngine engine(SoftDevice requesterDevice) {
    return link().engine();
  }

  @Override
  public int request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    return link().send(FabricWire.REQUEST, requester, device, header, payload);
  }

  @Override
  public int datagram(SoftQp requester, RequestHeader header, Segments payload) {
    return link().send(FabricWire.DATAGRAM, requester, device, header, payload);
  }

  @Override
  public void attach(SoftQp qp) {
    while (!link().attach(qp)) {
      // retired between the look and the attach: the next look finds a new link
    }
  }

  @Override
  public void detach(SoftQp qp) {
    link.detach(qp);
  }

  @Override
  public String describe(Gid gid) {
    FabricLink l = link;
    return "device " + device + " of the process at " + address + l.lastFailure();
  }
}
