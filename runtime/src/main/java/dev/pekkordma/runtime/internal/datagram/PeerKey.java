package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.Gid;

/** A datagram sender: the GID its GRH names and the QP it sends from. */
@InternalApi
public record PeerKey(Gid gid, int qpn) {}
