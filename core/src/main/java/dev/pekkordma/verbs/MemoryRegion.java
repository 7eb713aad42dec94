package dev.pekkordma.verbs;

/** A registered memory region ({@code ibv_mr}). */
public interface MemoryRegion extends AutoCloseable {
  ProtectionDomain pd();

  long address();

  long length();

  int lkey();

  int rkey();

  int access();

  /** The provider's handle ({@code struct ibv_mr *} on the native provider). */
  long handle();

  /**
   * Changes the translation and access ({@code ibv_rereg_mr} with CHANGE_TRANSLATION and
   * CHANGE_ACCESS); keys may change, so read them again.
   */
  void reRegister(long address, long length, int access);

  /** Deregisters ({@code ibv_dereg_mr}); fails with EBUSY while a memory window is bound to it. */
  @Override
  void close();
}
