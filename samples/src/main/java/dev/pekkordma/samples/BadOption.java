package dev.pekkordma.samples;

/** A command-line value that can't work; the message names the option. Exit code 2. */
public final class BadOption extends IllegalArgumentException {
  public BadOption(String message) {
    super(message);
  }
}
