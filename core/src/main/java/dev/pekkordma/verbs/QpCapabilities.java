package dev.pekkordma.verbs;

/** Queue sizes of a QP ({@code ibv_qp_cap}). */
public record QpCapabilities(
    int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {}
