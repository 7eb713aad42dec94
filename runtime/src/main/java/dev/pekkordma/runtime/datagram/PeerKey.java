package dev.pekkordma.runtime.datagram;

import dev.pekkordma.verbs.Gid;

/** A datagram sender: the GID its GRH names and the QP it sends from. */
public record PeerKey(Gid gid, int qpn) {}
