package dev.pekkordma.cluster;

import org.apache.pekko.actor.Address;

/** A message of a channel that arrived from {@code from}. */
public record Received<T>(Address from, T message) {}
