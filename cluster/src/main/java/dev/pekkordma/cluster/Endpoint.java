package dev.pekkordma.cluster;

import org.apache.pekko.actor.Address;

/**
 * What a member advertises: where its RDMA CM listens, and what its device is, so that a peer can
 * tell before connecting whether the two can talk.
 *
 * @param member the member's Pekko address
 * @param uid the member's incarnation (a restarted member has a new one)
 * @param host the CM address to connect to
 * @param port the CM port
 * @param streamPort the port of its streams listener ({@link Channel#streamSink}), 0 for none
 * @param provider "soft" or "native": the software provider talks only to the software provider
 * @param transport the device's transport (e.g. "soft-roce", "InfiniBand")
 * @param linkLayer the port's link layer (INFINIBAND, ETHERNET)
 * @param maxQpWr the device's largest queue
 * @param maxMessage the largest frame its receives take (its buffer size)
 * @param version the wire protocol's version
 */
public record Endpoint(Address member, long uid, String host, int port, int streamPort,
    String provider, String transport, String linkLayer, int maxQpWr, int maxMessage,
    int version) {

  /** The wire protocol spoken over the connections; peers of another version are refused. */
  public static final int VERSION = 1;

  /** Why the two cannot talk, or null when they can. */
  public String incompatibility(Endpoint other) {
    if (version != other.version) {
      return "it speaks protocol version " + other.version + ", this member " + version;
    }
    if (!provider.equals(other.provider)) {
      String theirs = Untrusted.text(other.provider);
      return "its RDMA provider is '" + theirs + "' and this member's is '" + provider
          + "': a " + provider + " device cannot reach a " + theirs + " one";
    }
    if (!transport.equals(other.transport)) {
      return "its device's transport is " + Untrusted.text(other.transport) + ", this member's "
          + transport;
    }
    if (!linkLayer.equals(other.linkLayer)) {
      return "its link layer is " + Untrusted.text(other.linkLayer) + ", this member's "
          + linkLayer;
    }
    return other.unusable();
  }

  /** What makes this endpoint unusable, whoever looks at it; null when nothing does. */
  private String unusable() {
    if (host.isBlank()) return "its endpoint names no host";
    if (port < 1 || port > 65535) return "its CM port " + port + " is not a port";
    if (streamPort < 0 || streamPort > 65535) {
      return "its streams port " + streamPort + " is not a port (nor 0, for none)";
    }
    if (maxMessage <= Frames.HEADER) {
      return "its receives take frames of " + maxMessage + " bytes: no room for a message";
    }
    if (maxQpWr < 2) {
      return "its device's queues of " + maxQpWr + " work requests cannot hold two receives";
    }
    return null;
  }

  /** host:port of the CM listener. */
  public String cmAddress() {
    return host + ":" + port;
  }
}
