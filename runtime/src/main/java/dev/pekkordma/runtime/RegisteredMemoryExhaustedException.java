package dev.pekkordma.runtime;

/**
 * A registration would take the library past {@value MemoryBudget#SETTING}: what asked for it
 * fails (a connection is refused, a pool not made), and nothing else does.
 */
public final class RegisteredMemoryExhaustedException extends RuntimeException {
  public RegisteredMemoryExhaustedException(String message) {
    super(message);
  }
}
