package dev.pekkordma.verbs;

/**
 * The capabilities a user checks before sizing resources ({@code ibv_query_device}); {@code
 * maxInlineData} is the most inline data a QP can be created with on this device.
 */
public record DeviceAttributes(
    String firmwareVersion,
    long nodeGuid,
    long maxMrSize,
    int maxQp,
    int maxQpWr,
    int maxSge,
    int maxCq,
    int maxCqe,
    int maxMr,
    int maxPd,
    int maxMw,
    int maxSrq,
    int maxSrqWr,
    int maxSrqSge,
    int maxQpRdAtom,
    int maxQpInitRdAtom,
    int maxInlineData,
    AtomicCapability atomicCap,
    int physPortCnt) {}
