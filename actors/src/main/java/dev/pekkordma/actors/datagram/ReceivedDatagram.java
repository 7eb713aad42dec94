package dev.pekkordma.actors.datagram;

import org.apache.pekko.util.ByteString;

/** A datagram that arrived, for a subscriber of an endpoint or a multicast group. */
public record ReceivedDatagram(Peer from, ByteString data) {}
