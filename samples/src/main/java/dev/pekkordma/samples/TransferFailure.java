package dev.pekkordma.samples;

/** The transfer could not be done; the message says why, for the user. */
public final class TransferFailure extends RuntimeException {
  public TransferFailure(String message) {
    super(message);
  }

  public TransferFailure(String message, Throwable cause) {
    super(message, cause);
  }
}
