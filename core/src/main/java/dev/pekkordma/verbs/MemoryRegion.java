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
   * CHANGE_ACCESS); keys may change, so read them again. Like {@link #close}, it returns once no
   * data lands in the old range any more.
   */
  void reRegister(long address, long length, int access);

  /**
   * Deregisters ({@code ibv_dereg_mr}); fails with EBUSY while a memory window is bound to it.
   * When it returns, no copy into or out of the memory is in progress and none can start (the
   * software provider waits for at most one chunk being placed, a bounded memcpy): the memory
   * may be freed at once. A request that needed it fails instead (LOC_PROT_ERR on the side that
   * deregistered, REM_ACCESS_ERR on its peer).
   */
  @Override
  void close();
}
