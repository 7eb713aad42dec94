/**
 * The verbs API and, found through ServiceLoader, the embedded software provider: its packages
 * are not exported.
 */
module dev.pekkordma.core {
  requires transitive typesafe.config;
  requires org.slf4j;
  // tls-channel 0.9.1 has no module descriptor nor Automatic-Module-Name: named from its jar
  requires tls.channel;
  requires jdk.unsupported; // sun.misc.Unsafe: off-heap reads and writes without bounds checks

  exports dev.pekkordma.verbs;
  exports dev.pekkordma.cm;
  exports dev.pekkordma.memory;
  exports dev.pekkordma.config;
  exports dev.pekkordma.annotation;
  exports dev.pekkordma.verbs.spi;
  // the ABI of work requests and completions: for the native provider, not the API
  exports dev.pekkordma.verbs.abi to dev.pekkordma.nativeverbs;

  uses dev.pekkordma.verbs.RdmaProviderFactory;
  provides dev.pekkordma.verbs.RdmaProviderFactory with dev.pekkordma.soft.SoftProviderFactory;
}
