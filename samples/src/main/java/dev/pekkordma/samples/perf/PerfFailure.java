package dev.pekkordma.samples.perf;

/** A run that could not complete: a failed completion, a peer that stopped, a bad request. */
public final class PerfFailure extends RuntimeException {
  private final boolean peerGone;

  public PerfFailure(String message) {
    this(message, false);
  }

  /** {@code peerGone}: this side stopped because the other one did (its failure says why). */
  PerfFailure(String message, boolean peerGone) {
    super(message);
    this.peerGone = peerGone;
  }

  boolean peerGone() {
    return peerGone;
  }

  public PerfFailure(String message, Throwable cause) {
    super(message, cause);
    this.peerGone = false;
  }
}
