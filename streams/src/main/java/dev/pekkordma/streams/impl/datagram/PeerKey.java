package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.verbs.Gid;

/** A datagram sender: the GID its GRH names and the QP it sends from. */
record PeerKey(Gid gid, int qpn) {}
