/**
 * The native provider over libibverbs and librdmacm, found through ServiceLoader; it has no API
 * of its own. The one exported package, {@code ffi}, holds the C libraries' interfaces: jnr-ffi
 * implements them in a class of its own making, in an unnamed module, which reaches exported
 * types only.
 */
module dev.pekkordma.nativeverbs {
  requires dev.pekkordma.core;
  requires org.slf4j;
  requires org.jnrproject.ffi;
  requires org.jnrproject.jffi;

  exports dev.pekkordma.nativeverbs.ffi;

  provides dev.pekkordma.verbs.RdmaProviderFactory
      with dev.pekkordma.nativeverbs.NativeProviderFactory;
}
