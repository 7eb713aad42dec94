/**
 * The native provider over libibverbs and librdmacm, found through ServiceLoader. Its package is
 * exported only because jnr-ffi implements {@code Verbs}' library interfaces in a class of its
 * own making, in an unnamed module, which reaches exported types only; its other types are
 * package-private.
 */
module dev.pekkordma.nativeverbs {
  requires dev.pekkordma.core;
  requires org.slf4j;
  requires org.jnrproject.ffi;
  requires org.jnrproject.jffi;

  exports dev.pekkordma.nativeverbs;

  provides dev.pekkordma.verbs.RdmaProviderFactory
      with dev.pekkordma.nativeverbs.NativeProviderFactory;
}
