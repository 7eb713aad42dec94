package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.AddressVector;

/** Where a datagram goes: the address vector, the remote QP and its Q_Key. */
@InternalApi
public record UdTarget(AddressVector av, int qpn, int qkey) {}
