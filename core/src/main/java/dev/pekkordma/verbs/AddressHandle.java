package dev.pekkordma.verbs;

/** An address handle for UD sends ({@code ibv_ah}). */
public interface AddressHandle extends AutoCloseable {
  AddressVector addressVector();

  /** The provider's handle ({@code struct ibv_ah *} on the native provider). */
  long handle();

  @Override
  void close();
}
