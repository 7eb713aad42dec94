package dev.pekkordma.verbs;

/** A port's state and addressing ({@code ibv_query_port}). */
public record PortAttributes(
    PortState state,
    Mtu maxMtu,
    Mtu activeMtu,
    int gidTableLength,
    int lid,
    LinkLayer linkLayer,
    long maxMsgSize) {}
