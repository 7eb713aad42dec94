package dev.pekkordma.runtime;

import dev.pekkordma.verbs.PortCounters;

/**
 * One port of a device, and its counters at the moment they were read: the device's own, for
 * every QP on the port (RNR NAKs and retries cannot be told apart per connection: the device
 * counts them per port).
 */
public record PortMetrics(String device, int port, PortCounters counters) {}
