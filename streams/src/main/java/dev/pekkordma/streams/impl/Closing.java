package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;

/** What completing a connection's upstream does, as Tcp's {@code halfClose} says. */
@InternalApi
public enum Closing {
  /** Sends the end of the stream and reads on until the peer ends its own. */
  HALF_CLOSE,
  /** Closes the connection, reading too. */
  FULL;

  /** Tcp's {@code halfClose} flag as a {@link Closing}. */
  public static Closing halfClose(boolean halfClose) {
    return halfClose ? HALF_CLOSE : FULL;
  }
}
