package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmId;
import dev.pekkordma.streams.RdmaStreamSettings;

/**
 * A connection's sizes, from its settings: the ring it starts with (and how the ring may grow:
 * {@code sizing}, null when it stays), its send buffers' size, its queue depths, and the flags
 * its rings carry. Both a binding that accepts early and the connection's own stage read it.
 */
record ConnectionPlan(RdmaStreamSettings settings, RingSizing sizing, RingSizing.Plan first,
    int slotSize, int sqDepth, int rqDepth, int ringFlags, Framing framing, boolean coalesce) {

  static ConnectionPlan of(StreamsRuntime rt, RdmaStreamSettings settings,
      Framing framing, boolean lend) {
    return of(rt.ringSizing, rt.coalesceWrites, settings, framing, lend);
  }

  /**
   * With the runtime's elastic-ring settings and whether small writes coalesce; {@code lend}:
   * the ring is lent in place.
   */
  static ConnectionPlan of(RingSizing.SizingSettings ringSizing, boolean coalesce,
      RdmaStreamSettings settings, Framing framing, boolean lend) {
    int slotSize = settings.bufferSize();
    RingSizing sizing = framing == Framing.MESSAGES && !lend
        ? RingSizing.of(ringSizing, settings.receiveBuffers(), slotSize) : null;
    RingSizing.Plan first = sizing != null ? sizing.initial()
        : new RingSizing.Plan(settings.receiveBuffers(), slotSize, true);
    // writes into an old ring and a new one may both wait to be taken
    int rqDepth = settings.receiveBuffers() + (sizing != null ? first.count() : 0) + 8;
    // the receiver splits batches into what was sent
    int flags = framing == Framing.MESSAGES && !lend ? Wire.TAKES_BATCHES : 0;
    return new ConnectionPlan(settings, sizing, first, slotSize, settings.sendQueueDepth(),
        rqDepth, flags, framing, coalesce);
  }

  boolean takesBatches() {
    return (ringFlags & Wire.TAKES_BATCHES) != 0;
  }

  /** The id's resources, none opened yet. */
  ConnectionResources resources(StreamsRuntime rt, CmId id) {
    ConnectionResources res = new ConnectionResources(rt, id, first.count(), first.size(),
        slotSize, settings.sendBuffers(), sqDepth, rqDepth, settings.inlineThreshold(),
        settings.path(), sizing != null);
    res.ringFlags = ringFlags;
    return res;
  }
}
