package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;

/** What a connection keeps of its elements' boundaries. */
@InternalApi
public enum Framing {
  /** One ByteString in is one out (RdmaStreams' connections, as Tcp's framing would give). */
  MESSAGES,
  /** A bulk connection's chunks: bytes in order, boundaries not kept. */
  BULK
}
