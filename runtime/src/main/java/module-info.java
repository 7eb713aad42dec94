/** One runtime per actor system: the provider, the CM dispatcher, completion hubs, pollers. */
module dev.pekkordma.runtime {
  requires transitive dev.pekkordma.core;
  requires transitive pekko.actor.typed;
  requires pekko.actor;
  requires scala.library;
  requires org.slf4j;
  requires jdk.management;
  requires jdk.jfr;

  exports dev.pekkordma.runtime;
  exports dev.pekkordma.runtime.datagram;
}
