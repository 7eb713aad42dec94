package dev.pekkordma.samples.interop;

/** A ping-pong or rping run that could not complete; the message says where and why. */
final class PingPongFailure extends RuntimeException {
  PingPongFailure(String message) {
    super(message);
  }

  PingPongFailure(String message, Throwable cause) {
    super(message, cause);
  }
}
